import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AbortedError,
  type EnvironmentFactory,
  ErrorCode,
  policyLoss,
  type Trajectory,
  type TrajectoryRequest,
} from '@rlvr/core';
import {
  buildFamilyTokenizer,
  type Checkpoint,
  createRandomCheckpoint,
  createTokenizer,
  parseLlamaConfig,
} from '@rlvr/model';
import { createOnnxSampler, HERMES_CHAT_TEMPLATE, type OnnxSampler } from '@rlvr/rollout';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../backend/select-backend.js';
import { createLlamaModel, type LlamaModel } from '../model/llama-model.js';
import { createPolicyTrainer } from '../train/policy-trainer.js';
import { createGrpoTrainer } from './create-grpo-trainer.js';

// Multi-turn GRPO: trainer logprobs = behaviour logprobs of the policy's tokens over trajectories
// with tool results in between (both rollout engines), environment tokens carry no gradient, and
// GrpoTrainer trains on an environment's trajectories with multi-turn metrics.
const TEMPERATURE = 0.8;
const TIMEOUT = 180_000;

/** A tiny Qwen2-style model whose tokenizer speaks Qwen's tool format; `</tool_call>` and EOS are likely. */
function toolCheckpoint(): Checkpoint {
  const files = buildFamilyTokenizer({
    family: 'qwen3',
    corpus: [
      '<tool_call>\n{"name": "calculator", "arguments": {"expression": "12 * 34"}}\n</tool_call>',
      'The answer is 408.',
    ],
    merges: 30,
    chatTemplate: HERMES_CHAT_TEMPLATE,
  });
  const tokenizer = createTokenizer(files);
  const config = parseLlamaConfig({
    model_type: 'qwen2',
    hidden_size: 32,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    intermediate_size: 48,
    vocab_size: tokenizer.vocabSize,
    max_position_embeddings: 1024,
    tie_word_embeddings: false,
  });
  const checkpoint = createRandomCheckpoint(config, { seed: 3, std: 0.3, perturbStd: 0.1 });
  const head = checkpoint.tensors.find((tensor) => tensor.name === 'lm_head.weight')!;
  const hidden = config.hidden_size;
  const data = new Float32Array(head.data);
  const mean = new Float32Array(hidden);
  for (let row = 0; row < config.vocab_size; row++)
    for (let column = 0; column < hidden; column++)
      mean[column]! += data[row * hidden + column]! / config.vocab_size;
  for (const [token, scale] of [
    ['</tool_call>', 40],
    ['<|im_end|>', 36],
  ] as const) {
    const id = tokenizer.tokenToId(token)!;
    for (let column = 0; column < hidden; column++)
      data[id * hidden + column]! += scale * mean[column]!;
  }
  return {
    ...checkpoint,
    tensors: checkpoint.tensors.map((tensor) => (tensor === head ? { ...head, data } : tensor)),
    tokenizer: files,
  };
}

/** Tool results for two turns, then done; reward 1 when the last turn called a tool. */
const environment: EnvironmentFactory = (input) => ({
  reset: () => ({
    messages: [{ role: 'user', content: `What is 12 * 34? (${input.sampleIndex})` }],
    tools: [
      { name: 'calculator', description: 'Evaluates arithmetic.', inputSchema: { type: 'object' } },
    ],
  }),
  step: (turn) =>
    turn.index >= 2
      ? { messages: [], done: true, reward: turn.finishReason === 'tool-call' ? 1 : 0 }
      : {
          messages: [{ role: 'tool', content: `result ${turn.index}: 408` }],
          done: false,
          toolResults: [
            { name: 'calculator', status: turn.index === 0 ? 'ok' : 'timeout', durationMs: 1 },
          ],
        },
});

const checkpoint = toolCheckpoint();
const samplers: OnnxSampler[] = [];
let model: LlamaModel;
beforeAll(async () => {
  await selectBackend({ candidates: ['wasm'] });
  model = await createLlamaModel(checkpoint);
});
afterAll(async () => {
  await Promise.all(samplers.map((sampler) => sampler.close()));
  model.dispose();
});
const measured: string[] = [];
afterAll(() => console.log(measured.join('\n')));

const request: TrajectoryRequest = {
  prompts: [{ prompt: 'a' }, { prompt: 'b' }],
  n: 4,
  maxNewTokens: 10,
  maxTurns: 4,
  maxTotalTokens: 300,
  temperature: TEMPERATURE,
  seed: 9,
  environment,
};

const sequencesOf = (trajectories: Trajectory[]) =>
  trajectories.map((trajectory) => ({
    promptIds: trajectory.promptTokenIds!,
    completionIds: trajectory.tokenIds,
  }));

describe('multi-turn GRPO', () => {
  it(
    "gives the trainer's logprobs at the sampling temperature for the policy's tokens (both engines)",
    async () => {
      const trainer = await createPolicyTrainer(model, { schedule: { learningRate: 1e-3 } });
      try {
        for (const engine of ['optimum', 'loop'] as const) {
          const sampler = await createOnnxSampler({ checkpoint, engine, workers: 0 });
          samplers.push(sampler);
          const trajectories = (await sampler.sampleTrajectories(request)).flat();
          const { logprobs } = trainer.completionLogprobs(sequencesOf(trajectories), {
            temperature: TEMPERATURE,
          });
          let max = 0;
          let policy = 0;
          let env = 0;
          trajectories.forEach((trajectory, index) => {
            trajectory.policyMask.forEach((isPolicy, at) => {
              if (isPolicy === 0) {
                env += 1;
                return;
              }
              policy += 1;
              max = Math.max(max, Math.abs(logprobs[index]![at]! - trajectory.logprobs[at]!));
            });
          });
          measured.push(
            `${engine}: max |trainer − behaviour| ${max.toExponential(2)} over ${policy} policy tokens (${env} environment tokens between turns)`,
          );
          expect(env).toBeGreaterThan(50);
          expect(policy).toBeGreaterThan(50);
          expect(max).toBeLessThan(1e-4);
        }
      } finally {
        trainer.dispose();
      }
    },
    TIMEOUT,
  );

  it(
    'gives environment tokens no gradient: their logprobs cannot move the update',
    async () => {
      const trajectories = (await samplers[0]!.sampleTrajectories(request)).flat();
      const sequences = sequencesOf(trajectories);
      const advantages = trajectories.map((_, index) => (index % 2 === 0 ? 1 : -0.5));
      const masks = trajectories.map((trajectory) => trajectory.policyMask);
      // core's loss: d loss / d logprob is exactly 0 at every masked (environment) position
      const logprobs = trajectories.map((trajectory) =>
        trajectory.logprobs.map((value) => value - 0.01),
      );
      const { gradLogprobs } = policyLoss({
        logprobs,
        oldLogprobs: trajectories.map((trajectory) => trajectory.logprobs),
        advantages,
        mask: masks,
        epsilonLow: 0.2,
        epsilonHigh: 0.28,
        aggregation: 'seq-mean-token-mean',
      });
      let masked = 0;
      for (const [index, row] of gradLogprobs.entries()) {
        for (const [at, value] of row.entries()) {
          if (masks[index]![at] === 0) {
            masked += 1;
            expect(value).toBe(0);
          }
        }
      }
      expect(masked).toBeGreaterThan(50);
      // the trainer: an update with garbage behaviour logprobs at environment positions is
      // bit-identical to one with zeros there (mismatch correction on), and differs from training
      // on the environment tokens too
      const update = async (behaviour: number[][], mask: number[][]) => {
        const copy = await createLlamaModel(checkpoint);
        const trainer = await createPolicyTrainer(copy, {
          schedule: { learningRate: 0.01 },
          grpo: { temperature: TEMPERATURE, mismatch: { mode: 'token-truncate', cap: 2 } },
        });
        trainer.grpoStep({ sequences, advantages, mask, behaviourLogprobs: behaviour });
        const weights = copy.toWeightSnapshot(1).tensors.map((tensor) => Array.from(tensor.data));
        trainer.dispose();
        copy.dispose();
        return weights;
      };
      const garbage = trajectories.map((trajectory) =>
        trajectory.logprobs.map((value, at) =>
          trajectory.policyMask[at] === 1 ? value : -3 - (at % 7),
        ),
      );
      const clean = await update(
        trajectories.map((trajectory) => trajectory.logprobs),
        masks,
      );
      expect(await update(garbage, masks)).toEqual(clean);
      const everything = await update(
        garbage,
        masks.map((mask) => mask.map(() => 1)),
      );
      expect(everything).not.toEqual(clean);
    },
    TIMEOUT,
  );

  it(
    'trains GrpoTrainer on an environment: loss on policy tokens, multi-turn and tool metrics',
    async () => {
      const sampler = samplers[0]!;
      const records: Parameters<typeof createGrpoTrainer>[0]['dataset'] = [
        { id: 'p0', prompt: 'a' },
        { id: 'p1', prompt: 'b' },
      ];
      const metrics: Record<string, number>[] = [];
      const grpo = await createGrpoTrainer({
        model,
        sampler,
        dataset: records,
        environment,
        config: {
          maxSteps: 2,
          promptsPerStep: 2,
          groupSize: 4,
          maxNewTokens: 10,
          maxTurns: 4,
          maxTotalTokens: 300,
          temperature: TEMPERATURE,
          seed: 1,
          schedule: { learningRate: 1e-3 },
          quiet: true,
        },
        onStep: (record) => metrics.push(record.metrics as Record<string, number>),
      });
      await grpo.train();
      grpo.dispose();
      expect(metrics).toHaveLength(2);
      const first = metrics[0]!;
      expect(first['turns/mean']).toBeGreaterThan(1);
      expect(first['tools/status/ok']! + first['tools/status/timeout']!).toBeGreaterThan(0);
      expect(first['tools/call_success_rate']).toBeGreaterThan(0);
      expect(first['tools/call_success_rate']).toBeLessThan(1);
      expect(first['reward/environment/mean']).toBeGreaterThanOrEqual(0);
      expect(first['trajectory/environment_tokens_mean']).toBeGreaterThan(0);
      // the loss tokens are the policy tokens of the trained trajectories, never environment tokens
      const perTrajectory =
        first['trajectory/policy_tokens_mean']! + first['trajectory/environment_tokens_mean']!;
      // (no dynamic sampling: all 8 trajectories are trained on)
      expect(first['tokens/loss']).toBeCloseTo(first['trajectory/policy_tokens_mean']! * 8, 6);
      expect(first['tokens/loss']).toBeLessThan(perTrajectory * 8);
      expect(Number.isFinite(first['mismatch/max_abs_logprob_diff'])).toBe(true);
      expect(first['mismatch/max_abs_logprob_diff']).toBeLessThan(1e-4);
    },
    TIMEOUT,
  );

  it(
    'leaves no partial trajectory trained or saved when a step is aborted mid-rollout',
    async () => {
      const outputDir = await mkdtemp(join(tmpdir(), 'rlvr-grpo-env-abort-'));
      try {
        const controller = new AbortController();
        let armed = false; // step 1 completes; the first environment step of step 2 aborts
        const aborting: EnvironmentFactory = (input) => {
          const inner = environment(input) as Awaited<ReturnType<EnvironmentFactory>>;
          return {
            reset: (value) => inner.reset(value),
            step: (turn) => {
              if (armed) controller.abort(new Error('stop mid-rollout'));
              return inner.step(turn);
            },
          };
        };
        let afterStep1: number[][] = [];
        const grpo = await createGrpoTrainer({
          model,
          sampler: samplers[0]!,
          dataset: [{ id: 'p', prompt: 'a' }],
          environment: aborting,
          config: {
            maxSteps: 3,
            promptsPerStep: 1,
            groupSize: 4,
            maxNewTokens: 10,
            temperature: TEMPERATURE,
            schedule: { learningRate: 1e-2 },
            outputDir,
            saveEvery: 1,
            quiet: true,
          },
          onStep: () => {
            afterStep1 = model.toWeightSnapshot(1).tensors.map((tensor) => Array.from(tensor.data));
            armed = true;
          },
        });
        await expect(grpo.train({ signal: controller.signal })).rejects.toSatisfy((error) =>
          AbortedError.isInstance(error),
        );
        grpo.dispose();
        // the aborted step trained nothing and wrote nothing: step 1's weights, rows and checkpoint only
        expect(model.toWeightSnapshot(1).tensors.map((tensor) => Array.from(tensor.data))).toEqual(
          afterStep1,
        );
        const rows = async (name: string) =>
          (await readFile(join(outputDir, name), 'utf8'))
            .trim()
            .split('\n')
            .map((line) => JSON.parse(line).step as number);
        expect(await rows('metrics.jsonl')).toEqual([1]);
        expect(new Set(await rows('completions.jsonl'))).toEqual(new Set([1]));
        expect(await readdir(join(outputDir, 'checkpoints'))).toHaveLength(1);
      } finally {
        await rm(outputDir, { recursive: true, force: true });
      }
    },
    TIMEOUT,
  );

  it('refuses what cannot work, naming it', async () => {
    const base = {
      model,
      dataset: [{ id: 'p', prompt: 'a' }],
      config: { maxSteps: 1, groupSize: 2, maxNewTokens: 4, quiet: true },
    };
    const single = {
      specificationVersion: 'v1',
      modelId: 'x',
      sample: async () => [],
      updateWeights: async () => {},
    };
    await expect(
      createGrpoTrainer({ ...base, sampler: single as never, environment }),
    ).rejects.toThrow(/options\.sampler.*MultiTurnSampler/);
    await expect(
      createGrpoTrainer({
        ...base,
        sampler: samplers[0]!,
        environment,
        config: { ...base.config, maxStaleness: 1, mismatch: { mode: 'token-truncate' } },
      }),
    ).rejects.toThrow(/options\.environment.*asynchronous/);
    await expect(
      createGrpoTrainer({
        ...base,
        sampler: samplers[0]!,
        rewards: [{ name: 'r', fn: () => 1 }],
        config: { ...base.config, maxTurns: 3 },
      }),
    ).rejects.toSatisfy(
      (error: { code?: string; message: string }) =>
        error.code === ErrorCode.INEFFECTIVE_OPTION && /config\.maxTurns/.test(error.message),
    );
    await expect(createGrpoTrainer({ ...base, sampler: samplers[0]! } as never)).rejects.toThrow(
      /options\.rewards/,
    );
  });
});
