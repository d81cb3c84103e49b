import {
  AbortedError,
  type ChatMessage,
  type Environment,
  type EnvironmentInput,
  InvalidArgumentError,
  type Trajectory,
  type TrajectoryEndReason,
  type TrajectoryRequest,
  type TrajectoryTurn,
  type TurnFinishReason,
  throwIfAborted,
  validateEnvironmentReset,
  validateEnvironmentStep,
  validateInteger,
  validateTrajectoryRequest,
} from '@rlvr/core';
import type { SequenceJob } from '../engine/generate-batch.js';
import type { PausedRow, RowAction, TurnSettings } from '../engine/generate-turns.js';
import { resolveLogitsOptions } from '../generation/logits-processors.js';
import { findStopString } from '../generation/stopping-criteria.js';
import type { RolloutTokenizer } from '../tokenizer/rollout-tokenizer.js';
import { parseToolCalls, TOOL_CALL_CLOSE } from './tool-call-format.js';
import { TurnRenderer } from './turn-renderer.js';

const FN = 'OnnxSampler.sampleTrajectories';

/** How a sampler runs multi-turn generation (on its thread or its workers). @internal */
export type RunTurns = (
  jobs: SequenceJob[],
  settings: TurnSettings,
  signal: AbortSignal | undefined,
  onPause: (rows: PausedRow[]) => Promise<RowAction[]>,
) => Promise<void>;

/** What {@link sampleTrajectories} needs from its sampler. @internal */
export type TrajectoryContext = {
  tokenizer: RolloutTokenizer | undefined;
  eosTokenIds: number[];
  run: RunTurns;
};

/** One trajectory as it is built, turn by turn. */
type Building = {
  input: EnvironmentInput;
  environment: Environment;
  renderer: TurnRenderer;
  promptTokenIds: number[];
  tokenIds: number[];
  logprobs: number[];
  policyMask: number[];
  turns: TrajectoryTurn[];
  messages: ChatMessage[];
  environmentReward: number | null;
  endReason?: TrajectoryEndReason;
};

function validateSampling(request: TrajectoryRequest) {
  const n = validateInteger(request.n, { parameter: 'request.n', functionName: FN, min: 1 });
  const maxNewTokens = validateInteger(request.maxNewTokens, {
    parameter: 'request.maxNewTokens',
    functionName: FN,
    min: 1,
  });
  const sampling = resolveLogitsOptions(
    {
      temperature: request.temperature,
      topK: request.topK,
      topP: request.topP,
      minP: request.minP,
      repetitionPenalty: request.repetitionPenalty,
    },
    FN,
    'request',
  );
  if (sampling.repetitionPenalty !== 1) {
    throw new InvalidArgumentError({
      parameter: 'request.repetitionPenalty',
      functionName: FN,
      value: request.repetitionPenalty,
      expected: '1 (multi-turn rollouts do not apply a repetition penalty)',
    });
  }
  const stop = request.stop ?? [];
  if (!Array.isArray(stop) || stop.some((item) => typeof item !== 'string' || item === '')) {
    throw new InvalidArgumentError({
      parameter: 'request.stop',
      functionName: FN,
      value: stop,
      expected: 'an array of non-empty strings',
    });
  }
  const seed =
    request.seed === undefined
      ? Math.floor(Math.random() * 2 ** 32)
      : validateInteger(request.seed, { parameter: 'request.seed', functionName: FN });
  return { n, maxNewTokens, sampling, stop: [...stop], seed };
}

/** The turn's finish reason and text (cut as the tracker cut it: before a stop string). */
function turnOf(
  row: PausedRow,
  tokenizer: RolloutTokenizer,
  stops: readonly string[],
  eos: ReadonlySet<number>,
): { finishReason: TurnFinishReason; text: string } {
  const text = tokenizer.decode(row.tokenIds);
  if (row.finishReason === 'length') return { finishReason: 'length', text };
  if (row.finishReason === 'abort') return { finishReason: 'abort', text };
  if (eos.has(row.tokenIds.at(-1)!)) return { finishReason: 'stop', text };
  const match = findStopString(text, stops);
  if (match?.stop === TOOL_CALL_CLOSE) {
    return { finishReason: 'tool-call', text: text.slice(0, match.index + match.stop.length) };
  }
  return { finishReason: 'stop', text: match ? text.slice(0, match.index) : text };
}

async function openEnvironments(request: TrajectoryRequest, n: number, seed: number) {
  const inputs: EnvironmentInput[] = [];
  request.prompts.forEach((entry, promptIndex) => {
    for (let sampleIndex = 0; sampleIndex < n; sampleIndex++) {
      inputs.push({
        prompt: entry.prompt,
        ...(entry.answer === undefined ? {} : { answer: entry.answer }),
        ...(entry.metadata === undefined ? {} : { metadata: entry.metadata }),
        promptIndex,
        sampleIndex,
        trajectoryId: `${seed}-${promptIndex}-${sampleIndex}`,
      });
    }
  });
  const opened = await Promise.allSettled(
    inputs.map(async (input) => {
      const environment = await request.environment(input);
      if (
        environment === null ||
        typeof environment !== 'object' ||
        typeof environment.reset !== 'function' ||
        typeof environment.step !== 'function'
      ) {
        throw new InvalidArgumentError({
          parameter: 'request.environment() result',
          functionName: FN,
          value: environment,
          expected: 'an Environment (an object with reset() and step() methods)',
        });
      }
      return environment;
    }),
  );
  const environments = opened.flatMap((entry) =>
    entry.status === 'fulfilled' ? [entry.value] : [],
  );
  const failed = opened.find((entry) => entry.status === 'rejected');
  if (failed) {
    await closeAll(environments);
    throw (failed as PromiseRejectedResult).reason;
  }
  return { inputs, environments };
}

async function closeAll(environments: readonly Environment[]): Promise<void> {
  await Promise.allSettled(environments.map(async (environment) => environment.close?.()));
}

function finish(building: Building, tokenizer: RolloutTokenizer): Trajectory {
  const endReason = building.endReason ?? 'abort';
  return {
    text: tokenizer.decode(building.tokenIds),
    tokenIds: building.tokenIds,
    logprobs: building.logprobs,
    promptTokenIds: building.promptTokenIds,
    finishReason: endReason === 'done' ? 'stop' : endReason === 'abort' ? 'abort' : 'length',
    policyMask: building.policyMask,
    turns: building.turns,
    endReason,
    environmentReward: building.environmentReward,
    messages: building.messages,
  };
}

/**
 * `sampleTrajectories` of the ONNX sampler (core's {@link TrajectoryRequest} rules): one
 * environment per trajectory, reset and rendered with the chat template (tools in its `tools`
 * variable), turns generated on the sampler's engine until the template's tool-call end, EOS or a
 * limit, each turn's tool calls parsed (Hermes / Qwen `<tool_call>` JSON; malformed blocks kept),
 * the environment stepped, and its messages rendered in the template's format and fed on the same
 * KV cache. Environments of different trajectories step concurrently; each is closed once.
 * @internal
 */
export async function sampleTrajectories(
  context: TrajectoryContext,
  request: TrajectoryRequest,
  signal: AbortSignal | undefined,
): Promise<Trajectory[][]> {
  const valid = validateTrajectoryRequest(request, FN);
  const { n, maxNewTokens, sampling, stop, seed } = validateSampling(valid);
  const { tokenizer } = context;
  if (!tokenizer) {
    throw new InvalidArgumentError({
      parameter: 'options.tokenizer',
      functionName: FN,
      value: undefined,
      expected: 'a tokenizer with a chat template (multi-turn rollouts render every turn)',
    });
  }
  throwIfAborted(signal, `${FN}()`);
  const { inputs, environments } = await openEnvironments(valid, n, seed);
  try {
    const states: Building[] = [];
    for (const [index, input] of inputs.entries()) {
      const environment = environments[index]!;
      const reset = validateEnvironmentReset(await environment.reset(input), FN);
      const renderer = new TurnRenderer(tokenizer, reset.tools, FN);
      states.push({
        input,
        environment,
        renderer,
        promptTokenIds: renderer.prompt(reset.messages),
        tokenIds: [],
        logprobs: [],
        policyMask: [],
        turns: [],
        messages: [...reset.messages],
        environmentReward: null,
      });
    }
    const eos = new Set(context.eosTokenIds);
    const stops = [...stop, TOOL_CALL_CLOSE];
    const step = async (row: PausedRow): Promise<RowAction> => {
      const state = states[row.job]!;
      const start = state.tokenIds.length;
      state.tokenIds.push(...row.tokenIds);
      state.logprobs.push(...row.logprobs);
      for (let index = 0; index < row.tokenIds.length; index++) state.policyMask.push(1);
      const { finishReason, text } = turnOf(row, tokenizer, stops, eos);
      const parsed = parseToolCalls(text);
      const turn: TrajectoryTurn = {
        start,
        end: state.tokenIds.length,
        environmentEnd: state.tokenIds.length,
        finishReason,
        text,
        toolCalls: parsed.toolCalls.length,
        malformedToolCalls: parsed.malformedToolCalls.length,
        toolResults: [],
      };
      state.turns.push(turn);
      const conversation = [...state.messages];
      state.messages.push({ role: 'assistant', content: text });
      if (finishReason === 'length' || finishReason === 'abort') {
        state.endReason = finishReason;
        return { done: true };
      }
      const result = validateEnvironmentStep(
        await state.environment.step({
          index: state.turns.length - 1,
          text,
          finishReason,
          ...parsed,
        }),
        FN,
      );
      turn.toolResults = result.toolResults ?? [];
      if (result.reward !== undefined) {
        turn.reward = result.reward;
        state.environmentReward = (state.environmentReward ?? 0) + result.reward;
      }
      if (result.done) {
        state.endReason = 'done';
        return { done: true };
      }
      if (state.turns.length >= valid.maxTurns) {
        state.endReason = 'max-turns';
        return { done: true };
      }
      const tokens = state.renderer.after(conversation, result.messages, row.tokenIds.at(-1));
      const room = valid.maxTotalTokens - state.tokenIds.length - tokens.length;
      if (room < 1) {
        state.endReason = 'length';
        return { done: true };
      }
      state.tokenIds.push(...tokens);
      for (let index = 0; index < tokens.length; index++) {
        state.logprobs.push(0);
        state.policyMask.push(0);
      }
      turn.environmentEnd = state.tokenIds.length;
      state.messages.push(...result.messages);
      return { done: false, tokens, maxNewTokens: Math.min(maxNewTokens, room) };
    };
    const jobs: SequenceJob[] = states.map((state) => ({
      promptIndex: state.input.promptIndex,
      sampleIndex: state.input.sampleIndex,
      promptTokenIds: state.promptTokenIds,
    }));
    const settings: TurnSettings = {
      sampling,
      maxNewTokens: Math.min(maxNewTokens, valid.maxTotalTokens),
      stop: stops,
      seed,
      eosTokenIds: context.eosTokenIds,
    };
    // an environment that throws ends the call (after every environment is closed); the engine
    // gets "done" for every row so that no worker waits for an answer
    let failure: { error: unknown } | undefined;
    const stopRun = new AbortController();
    const onAbort = () => stopRun.abort(signal?.reason);
    if (signal?.aborted) onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    const onPause = async (rows: PausedRow[]): Promise<RowAction[]> => {
      try {
        return await Promise.all(rows.map(step));
      } catch (error) {
        failure ??= { error };
        stopRun.abort(error);
        return rows.map(() => ({ done: true }));
      }
    };
    try {
      await context.run(jobs, settings, stopRun.signal, onPause);
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
    if (failure) throw failure.error;
    if (signal?.aborted) throw new AbortedError({ operation: `${FN}()`, cause: signal.reason });
    const result = valid.prompts.map(() => new Array<Trajectory>(n));
    for (const state of states) {
      result[state.input.promptIndex]![state.input.sampleIndex] = finish(state, tokenizer);
    }
    return result;
  } finally {
    await closeAll(environments);
  }
}
