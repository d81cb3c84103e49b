import {
  AbortedError,
  type EnvironmentFactory,
  type Trajectory,
  type TrajectoryRequest,
  validateTrajectory,
} from '@rlvr/core';
import { referenceForward } from '@rlvr/model';
import { afterAll, describe, expect, it } from 'vitest';
import { createOnnxSampler, type OnnxSampler } from '../onnx/onnx-sampler.js';
import { toolCheckpoint } from './__fixtures__/tool-model.js';

// Multi-turn rollouts on both engines and on a worker: every turn pauses at </tool_call> or EOS,
// the environment's tool results are rendered in the Hermes / Qwen format and fed on the same KV
// cache, and the behaviour logprobs of every policy token equal the float64 reference's log
// softmax(logits / T) over the whole trajectory (tool results in between).
const TIMEOUT = 120_000;
const TEMPERATURE = 0.8;
const { checkpoint, tokenizer } = toolCheckpoint();
const calculator = {
  name: 'calculator',
  description: 'Evaluates an arithmetic expression.',
  inputSchema: { type: 'object', properties: { expression: { type: 'string' } } },
};
const closed: string[] = [];

/** Answers every turn with a tool message (its content differs per turn and sample), done after 3. */
const environment: EnvironmentFactory = (input) => ({
  reset: () => ({
    messages: [
      { role: 'user', content: `What is 12 * 34? (${input.promptIndex}.${input.sampleIndex})` },
    ],
    tools: [calculator],
  }),
  step: (turn) =>
    turn.index >= 2
      ? { messages: [], done: true, reward: 1 }
      : {
          messages: [
            {
              role: 'tool',
              content: `result ${turn.index}: ${408 + input.sampleIndex * turn.index}`,
            },
          ],
          done: false,
          reward: 0.5,
          toolResults: turn.toolCalls.map((call) => ({
            name: call.name,
            status: 'ok' as const,
            durationMs: 0,
          })),
        },
  close: () => {
    closed.push(input.trajectoryId);
  },
});

const request: TrajectoryRequest = {
  prompts: [{ prompt: 'a' }, { prompt: 'b' }],
  n: 3,
  maxNewTokens: 12,
  maxTurns: 4,
  maxTotalTokens: 400,
  temperature: TEMPERATURE,
  seed: 5,
  environment,
};

/** max |behaviour logprob − float64 reference| over the policy tokens, and the token counts. */
function parity(groups: Trajectory[][]) {
  let max = 0;
  let policy = 0;
  let env = 0;
  for (const trajectory of groups.flat()) {
    const prompt = trajectory.promptTokenIds!;
    const ids = [...prompt, ...trajectory.tokenIds];
    const { logits } = referenceForward(checkpoint, { inputIds: [ids] });
    const vocab = logits.dims[2]!;
    trajectory.tokenIds.forEach((token, index) => {
      if (trajectory.policyMask[index] === 0) {
        env += 1;
        return;
      }
      policy += 1;
      const row = logits.data.subarray(
        (prompt.length - 1 + index) * vocab,
        (prompt.length + index) * vocab,
      );
      let top = -Infinity;
      for (const value of row) top = Math.max(top, value / TEMPERATURE);
      let sum = 0;
      for (const value of row) sum += Math.exp(value / TEMPERATURE - top);
      const reference = row[token]! / TEMPERATURE - top - Math.log(sum);
      max = Math.max(max, Math.abs(reference - trajectory.logprobs[index]!));
    });
  }
  return { max, policy, env };
}

const samplers: OnnxSampler[] = [];
afterAll(async () => {
  await Promise.all(samplers.map((sampler) => sampler.close()));
});
const measured: string[] = [];
afterAll(() => console.log(measured.join('\n')));

async function roll(engine: 'optimum' | 'loop', workers: number) {
  const sampler = await createOnnxSampler({
    checkpoint,
    workers,
    engine,
    ...(engine === 'loop' ? { stepsPerRun: 4 } : {}),
  });
  samplers.push(sampler);
  return sampler.sampleTrajectories(request);
}

describe('sampleTrajectories', () => {
  let optimum: Trajectory[][];
  it(
    'rolls out multi-turn trajectories whose behaviour logprobs are the float64 reference (optimum)',
    async () => {
      optimum = await roll('optimum', 0);
      const flat = optimum.flat();
      expect(flat).toHaveLength(6);
      for (const [index, trajectory] of flat.entries())
        validateTrajectory(trajectory, `t${index}`, 'test');
      // several turns with environment tokens between them, G per prompt with different turn counts
      expect(flat.every((trajectory) => trajectory.turns.length >= 1)).toBe(true);
      expect(flat.some((trajectory) => trajectory.turns.length === 3)).toBe(true);
      expect(
        flat.some((trajectory) =>
          trajectory.turns.some((turn) => turn.finishReason === 'tool-call'),
        ),
      ).toBe(true);
      const { max, policy, env } = parity(optimum);
      measured.push(
        `optimum: max |Δ logprob| ${max.toExponential(2)} over ${policy} policy tokens, ${env} environment tokens`,
      );
      expect(env).toBeGreaterThan(policy / 2);
      expect(max).toBeLessThan(1e-4);
    },
    TIMEOUT,
  );

  it('renders the environment tokens in the template format, ends by the rules and closes every environment', () => {
    for (const trajectory of optimum.flat()) {
      trajectory.turns.forEach((turn, index) => {
        const envText = tokenizer.decode(trajectory.tokenIds.slice(turn.end, turn.environmentEnd));
        const last = trajectory.tokenIds[turn.end - 1]!;
        if (turn.environmentEnd === turn.end) return;
        const opening = last === tokenizer.tokenToId('<|im_end|>') ? '\n' : '<|im_end|>\n';
        const content = trajectory.messages.filter((message) => message.role === 'tool')[index]!
          .content;
        expect(envText).toBe(
          `${opening}<|im_start|>user\n<tool_response>\n${content}\n</tool_response><|im_end|>\n<|im_start|>assistant\n`,
        );
        expect(turn.finishReason === 'tool-call' ? turn.text.endsWith('</tool_call>') : true).toBe(
          true,
        );
      });
      const final = trajectory.turns.at(-1)!;
      if (trajectory.endReason === 'done') {
        expect(trajectory.turns).toHaveLength(3);
        expect(trajectory.environmentReward).toBe(2);
        expect(trajectory.finishReason).toBe('stop');
      } else {
        expect(trajectory.endReason).toBe('length'); // a turn cut at maxNewTokens
        expect(final.finishReason).toBe('length');
        expect(trajectory.finishReason).toBe('length');
      }
      // the prompt is the first messages with the tools, rendered by the template
      const prompt = tokenizer.decode(trajectory.promptTokenIds!);
      expect(prompt).toContain('<tools>\n{"type": "function", "function": {"name": "calculator"');
      expect(prompt.endsWith('<|im_start|>assistant\n')).toBe(true);
    }
    expect(new Set(closed).size).toBe(6);
  });

  it(
    'gives the same trajectories on the loop engine and on a worker',
    async () => {
      const loop = await roll('loop', 0);
      const worker = await roll('optimum', 1);
      const tokens = (groups: Trajectory[][]) =>
        groups.flat().map((trajectory) => trajectory.tokenIds);
      expect(tokens(loop)).toEqual(tokens(optimum));
      expect(tokens(worker)).toEqual(tokens(optimum));
      expect(worker.flat().map((t) => t.logprobs)).toEqual(optimum.flat().map((t) => t.logprobs));
      const { max, policy, env } = parity(loop);
      measured.push(
        `loop: max |Δ logprob| ${max.toExponential(2)} over ${policy} policy tokens, ${env} environment tokens`,
      );
      expect(max).toBeLessThan(1e-4);
    },
    TIMEOUT,
  );

  it(
    'truncates at maxTotalTokens and maxTurns, rejects an aborted call and closes its environments',
    async () => {
      const sampler = samplers[0]!;
      const short = await sampler.sampleTrajectories({ ...request, maxTotalTokens: 40 });
      for (const trajectory of short.flat()) {
        expect(trajectory.tokenIds.length).toBeLessThanOrEqual(40);
        expect(['length', 'done']).toContain(trajectory.endReason);
      }
      const oneTurn = await sampler.sampleTrajectories({ ...request, maxTurns: 1 });
      for (const trajectory of oneTurn.flat()) {
        expect(trajectory.turns).toHaveLength(1);
        expect(['max-turns', 'length']).toContain(trajectory.endReason);
        expect(trajectory.finishReason).toBe('length');
      }
      closed.length = 0;
      const controller = new AbortController();
      const slow: EnvironmentFactory = (input) => {
        const inner = environment(input) as ReturnType<EnvironmentFactory> & { step: never };
        return {
          ...(inner as object),
          step: async (turn: never) => {
            controller.abort(new Error('stop'));
            return (inner as { step: (turn: never) => unknown }).step(turn);
          },
        } as never;
      };
      await expect(
        sampler.sampleTrajectories(
          { ...request, environment: slow },
          { signal: controller.signal },
        ),
      ).rejects.toSatisfy((error) => AbortedError.isInstance(error));
      expect(new Set(closed).size).toBe(6);
    },
    TIMEOUT,
  );

  it('names bad requests and an environment that throws ends the call', async () => {
    const sampler = samplers[0]!;
    await expect(sampler.sampleTrajectories({ ...request, maxTurns: 0 })).rejects.toThrow(
      /request\.maxTurns/,
    );
    await expect(sampler.sampleTrajectories({ ...request, maxTurn: 2 } as never)).rejects.toThrow(
      /did you mean 'maxTurns'/,
    );
    await expect(
      sampler.sampleTrajectories({ ...request, repetitionPenalty: 1.2 }),
    ).rejects.toThrow(/request\.repetitionPenalty/);
    const broken: EnvironmentFactory = () => ({
      reset: () => ({ messages: [{ role: 'user', content: 'x' }] }),
      step: () => {
        throw new Error('environment bug');
      },
    });
    await expect(sampler.sampleTrajectories({ ...request, environment: broken })).rejects.toThrow(
      /environment bug/,
    );
  });
});
