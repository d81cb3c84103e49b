import { InvalidArgumentError } from '../errors/invalid-argument-error.js';
import { ShapeMismatchError } from '../errors/shape-mismatch-error.js';
import { validateOptions } from '../validation/options.js';
import { validateInteger } from '../validation/validate.js';
import type {
  ChatMessage,
  EnvironmentFactory,
  ToolResultRecord,
  TurnFinishReason,
} from './environment.js';
import type { Completion, SampleRequest, Sampler } from './sampler.js';

/** One prompt of a {@link TrajectoryRequest}: a dataset record the environment is reset with. */
export type TrajectoryPrompt = {
  prompt: string;
  answer?: unknown;
  metadata?: Readonly<Record<string, unknown>>;
};

/**
 * What to roll out: G trajectories per prompt, each against its own environment. The sampling
 * fields mean what they mean in {@link SampleRequest} (defaults {@link SAMPLE_REQUEST_DEFAULTS});
 * `maxNewTokens` is the limit of one assistant turn.
 *
 * **Rules** (every multi-turn sampler follows them):
 * - A trajectory is: the first messages of `reset()` rendered with the chat template (its
 *   `promptTokenIds`), then assistant turns (policy tokens) and the environment's messages
 *   rendered in the template's format (environment tokens), one after the other.
 * - A turn ends at the template's tool-call end (`</tool_call>`, `tool-call`), at EOS or a stop
 *   string (`stop`), or at `maxNewTokens` / the total budget (`length`). After a `tool-call` or
 *   `stop` turn the environment is stepped; its messages are appended unless it says `done`.
 * - `maxTurns` bounds the assistant turns: after the last one the trajectory ends (`max-turns`)
 *   even if the environment is not done.
 * - `maxTotalTokens` bounds `tokenIds` (policy + environment tokens after the prompt). A turn
 *   cut by it or by `maxNewTokens` ends the trajectory (`length`; the environment is not stepped
 *   with a cut turn), and environment messages that would not fit are not appended (`length`).
 * - A trajectory ended by `length` or `max-turns` is *truncated*: `finishReason: 'length'`
 *   (`maskTruncatedCompletions` masks it like a truncated completion). `done` ends it with `stop`.
 * - **Abort** follows {@link Sampler}: an aborted signal rejects the call with `AbortedError`
 *   (no partial trajectories), every environment created is closed, and no consumer scores,
 *   trains on or saves a trajectory with `finishReason: 'abort'`. A rejected call may be repeated
 *   with the same request (same `seed`) and gives the same trajectories when the environments are
 *   deterministic; loops resume from their last checkpoint as for single-turn sampling.
 */
export type TrajectoryRequest = Omit<
  SampleRequest,
  'prompts' | 'returnModelLogprobs' | 'topLogprobs' | 'confidenceStop'
> & {
  prompts: readonly TrajectoryPrompt[];
  /** Creates the environment of each trajectory. */
  environment: EnvironmentFactory;
  /** Most assistant turns per trajectory (integer ≥ 1). */
  maxTurns: number;
  /** Most tokens after the prompt (policy + environment; integer ≥ 1). */
  maxTotalTokens: number;
};

/** Every key of {@link TrajectoryRequest}. */
export const TRAJECTORY_REQUEST_KEYS = [
  'prompts',
  'n',
  'maxNewTokens',
  'temperature',
  'topP',
  'topK',
  'minP',
  'repetitionPenalty',
  'stop',
  'seed',
  'environment',
  'maxTurns',
  'maxTotalTokens',
] as const satisfies readonly (keyof TrajectoryRequest)[];

/** Why a trajectory ended (see the rules of {@link TrajectoryRequest}). */
export type TrajectoryEndReason = 'done' | 'max-turns' | 'length' | 'abort';

/** Every {@link TrajectoryEndReason}, for validation and metric names. */
export const TRAJECTORY_END_REASONS = [
  'done',
  'max-turns',
  'length',
  'abort',
] as const satisfies readonly TrajectoryEndReason[];

/** One assistant turn of a {@link Trajectory} and the environment tokens that follow it. */
export type TrajectoryTurn = {
  /** The turn's policy tokens are `tokenIds[start, end)`. */
  start: number;
  end: number;
  /** The environment tokens after the turn are `tokenIds[end, environmentEnd)` (none: `end`). */
  environmentEnd: number;
  finishReason: TurnFinishReason;
  /** The turn's decoded text. */
  text: string;
  toolCalls: number;
  malformedToolCalls: number;
  /** What the environment's step reported for this turn's tool calls. */
  toolResults: ToolResultRecord[];
  /** The step's reward, if it gave one. */
  reward?: number;
};

/**
 * A multi-turn rollout: a {@link Completion} whose `tokenIds` hold every token after the prompt —
 * the policy's (trainable, with behaviour logprobs) and the environment's (masked) — plus the turn
 * boundaries and the transcript. `logprobs[i]` is the behaviour logprob where `policyMask[i]` is 1
 * and 0 where it is 0 (an environment token was not sampled). `text` is the decoded whole
 * (special tokens skipped); `finishReason` is `stop` (`done`), `length` (truncated) or `abort`.
 */
export type Trajectory = Completion & {
  /** Per token of `tokenIds`: 1 = the policy sampled it, 0 = the environment appended it. */
  policyMask: number[];
  turns: TrajectoryTurn[];
  endReason: TrajectoryEndReason;
  /** Sum of the environment's step rewards; null when no step gave a reward. */
  environmentReward: number | null;
  /** The conversation: reset messages, assistant turns and environment messages, in order. */
  messages: ChatMessage[];
};

/** A {@link Sampler} that also rolls out multi-turn trajectories against environments. */
export interface MultiTurnSampler extends Sampler {
  /** Rolls out `request.n` trajectories per prompt: result[promptIndex][sampleIndex]. */
  sampleTrajectories(
    request: TrajectoryRequest,
    options?: { signal?: AbortSignal },
  ): Promise<Trajectory[][]>;
}

/** True when `sampler` has `sampleTrajectories` (a {@link MultiTurnSampler}). */
export function isMultiTurnSampler(sampler: unknown): sampler is MultiTurnSampler {
  return (
    sampler !== null &&
    typeof sampler === 'object' &&
    typeof (sampler as MultiTurnSampler).sampleTrajectories === 'function'
  );
}

/**
 * Checks the multi-turn part of a {@link TrajectoryRequest} (keys, `environment`, `maxTurns`,
 * `maxTotalTokens`, `prompts`); samplers check the sampling fields as for `sample()`.
 * @throws {InvalidArgumentError} naming `request.<field>`; `UNKNOWN_OPTION` for an unknown key.
 */
export function validateTrajectoryRequest(
  request: unknown,
  functionName: string,
): TrajectoryRequest {
  const value = validateOptions<TrajectoryRequest>(request ?? null, {
    parameter: 'request',
    functionName,
    known: TRAJECTORY_REQUEST_KEYS,
  });
  if (typeof value.environment !== 'function') {
    throw new InvalidArgumentError({
      parameter: 'request.environment',
      functionName,
      value: value.environment,
      expected: 'an environment factory (input) => Environment',
    });
  }
  validateInteger(value.maxTurns, { parameter: 'request.maxTurns', functionName, min: 1 });
  validateInteger(value.maxTotalTokens, {
    parameter: 'request.maxTotalTokens',
    functionName,
    min: 1,
  });
  if (!Array.isArray(value.prompts)) {
    throw new InvalidArgumentError({
      parameter: 'request.prompts',
      functionName,
      value: value.prompts,
      expected: 'an array of { prompt, answer?, metadata? }',
    });
  }
  value.prompts.forEach((entry, index) => {
    validateOptions(entry ?? null, {
      parameter: `request.prompts[${index}]`,
      functionName,
      known: ['prompt', 'answer', 'metadata'],
    });
    if (typeof entry.prompt !== 'string') {
      throw new InvalidArgumentError({
        parameter: `request.prompts[${index}].prompt`,
        functionName,
        value: entry.prompt,
        expected: 'a string',
      });
    }
  });
  return value as TrajectoryRequest;
}

/**
 * Checks that a trajectory's arrays line up: `policyMask` and `logprobs` as long as `tokenIds`,
 * the mask 0/1, turns in order covering `tokenIds` (each turn's tokens policy tokens, the tokens
 * after it environment tokens), finite logprobs on policy tokens. Trainers call it before
 * training on a trajectory.
 * @throws {ShapeMismatchError} / {@link InvalidArgumentError} naming `<where>.<field>`.
 */
export function validateTrajectory(trajectory: Trajectory, where: string, functionName: string) {
  const { tokenIds, policyMask, logprobs, turns } = trajectory;
  if (!Array.isArray(policyMask) || policyMask.length !== tokenIds.length) {
    throw new ShapeMismatchError({
      parameter: `${where}.policyMask`,
      functionName,
      expected: `one entry per token id (${tokenIds.length})`,
      actual: Array.isArray(policyMask) ? `${policyMask.length} entries` : typeof policyMask,
    });
  }
  if (logprobs.length !== tokenIds.length) {
    throw new ShapeMismatchError({
      parameter: `${where}.logprobs`,
      functionName,
      expected: `one entry per token id (${tokenIds.length})`,
      actual: `${logprobs.length} entries`,
    });
  }
  if (!Array.isArray(turns)) {
    throw new InvalidArgumentError({
      parameter: `${where}.turns`,
      functionName,
      value: turns,
      expected: 'an array of turns',
    });
  }
  let cursor = 0;
  turns.forEach((turn, index) => {
    const ok =
      turn.start === cursor &&
      turn.end >= turn.start &&
      turn.environmentEnd >= turn.end &&
      turn.environmentEnd <= tokenIds.length;
    if (!ok) {
      throw new ShapeMismatchError({
        parameter: `${where}.turns[${index}]`,
        functionName,
        expected: `a turn starting at token ${cursor} within ${tokenIds.length} tokens`,
        actual: `start ${turn.start}, end ${turn.end}, environmentEnd ${turn.environmentEnd}`,
      });
    }
    for (let position = turn.start; position < turn.environmentEnd; position++) {
      const expected = position < turn.end ? 1 : 0;
      if (policyMask[position] !== expected) {
        throw new InvalidArgumentError({
          parameter: `${where}.policyMask[${position}]`,
          functionName,
          value: policyMask[position],
          expected: `${expected} (token ${position} is ${expected ? 'a policy' : 'an environment'} token of turn ${index})`,
        });
      }
      if (expected === 1 && !Number.isFinite(logprobs[position])) {
        throw new InvalidArgumentError({
          parameter: `${where}.logprobs[${position}]`,
          functionName,
          value: logprobs[position],
          expected: 'a finite behaviour logprob (a policy token)',
        });
      }
    }
    cursor = turn.environmentEnd;
  });
  if (cursor !== tokenIds.length) {
    throw new ShapeMismatchError({
      parameter: `${where}.turns`,
      functionName,
      expected: `turns covering all ${tokenIds.length} tokens`,
      actual: `turns covering ${cursor}`,
    });
  }
}
