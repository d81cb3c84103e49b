import { createRng, type EnvironmentFactory, type ToolSpec, type Trajectory } from '@rlvr/core';
import type { Checkpoint } from '@rlvr/model';
import { createOnnxSampler } from '@rlvr/rollout';
import { createCalculatorTool, createToolEnvironment } from '@rlvr/tools';
import { createGrpoTrainer, createLlamaModel } from '@rlvr/trainer';
import { buildChatTokenizer, type DemoTurn, demonstrationSequences, tokenizerOf } from './chat.js';
import { calledTool, rollOutGreedy, transcript } from './evaluate.js';
import { type ModelSize, randomCheckpoint, warmStart } from './model.js';

/** Sizes of the calculator demo (`--quick` shrinks them). */
export type CalculatorDemoConfig = {
  model: ModelSize;
  /** Problems demonstrated in the warm start (per arm). */
  demonstrations: number;
  /**
   * With the calculator: the share of demonstrations that call it (the others answer directly, as
   * every demonstration of the arm without it does), so the warm start calls it only sometimes.
   */
  toolDemoShare: number;
  sftSteps: number;
  sftBatchSize: number;
  sftLearningRate: number;
  grpoSteps: number;
  promptsPerStep: number;
  groupSize: number;
  grpoLearningRate: number;
  /** Sampling temperature of GRPO (the trainer's logprobs use it too). */
  temperature: number;
  /** Held-out problems (never trained on). */
  heldOut: number;
  seed: number;
};

/** One arm of the demo: with the calculator tool, or the same budget without it. */
export type ArmResult = {
  arm: 'with-calculator' | 'without-calculator';
  /** Greedy held-out accuracy and tool-call rate, and both for 4 samples per problem at the GRPO temperature. */
  warmStart: EvalNumbers & { sftLoss: number };
  final: EvalNumbers;
  /** Per GRPO step: mean reward and the share of trajectories that called a tool. */
  curve: { step: number; reward: number; toolCallRate: number; turns: number }[];
  transcripts: string[];
  timeMs: number;
};

export type EvalNumbers = {
  accuracy: number;
  toolCallRate: number;
  sampledAccuracy: number;
  sampledToolCallRate: number;
};

export type CalculatorDemoResult = {
  config: CalculatorDemoConfig;
  arms: ArmResult[];
  timeMs: number;
};

type Problem = { a: number; b: number; product: number };

function problems(count: number, seed: string, base: number): Problem[] {
  const rng = createRng(base).derive(seed);
  return Array.from({ length: count }, () => {
    const a = 1000 + rng.nextInt(9000);
    const b = 1000 + rng.nextInt(9000);
    return { a, b, product: a * b };
  });
}

const question = ({ a, b }: Problem) => `What is ${a} * ${b}?`;
const toolCall = ({ a, b }: Problem) =>
  `<tool_call>\n{"name": "calculator", "arguments": {"expression": "${a} * ${b}"}}\n</tool_call>`;

/** The demo's environment: the calculator (or no tool), reward 1 for the exact product. */
export function calculatorEnvironment(withCalculator: boolean): EnvironmentFactory {
  return createToolEnvironment({
    setup: ({ answer }) => ({
      tools: withCalculator ? [createCalculatorTool()] : [],
      reward: ({ turns }) => (turns.at(-1)?.text.trim() === String(answer) ? 1 : 0),
    }),
  });
}

const MAX_TURNS = 2;
const MAX_NEW_TOKENS = 40;
const MAX_TOTAL_TOKENS = 120;

async function evaluateArm(
  checkpoint: Checkpoint,
  heldOut: Problem[],
  withCalculator: boolean,
  temperature: number,
) {
  const run = (sampled?: { temperature: number; n: number; seed: number }) =>
    rollOutGreedy({
      checkpoint,
      prompts: heldOut.map((problem) => ({ prompt: question(problem), answer: problem.product })),
      environment: calculatorEnvironment(withCalculator),
      maxTurns: MAX_TURNS,
      maxNewTokens: MAX_NEW_TOKENS,
      maxTotalTokens: MAX_TOTAL_TOKENS,
      ...(sampled ? { sampled } : {}),
    });
  const share = (trajectories: Trajectory[], pick: (trajectory: Trajectory) => boolean) =>
    trajectories.filter(pick).length / trajectories.length;
  const correct = (trajectory: Trajectory) => (trajectory.environmentReward ?? 0) > 0;
  const greedy = await run();
  const sampled = await run({ temperature, n: 4, seed: 99 });
  return {
    accuracy: share(greedy, correct),
    toolCallRate: share(greedy, calledTool),
    sampledAccuracy: share(sampled, correct),
    sampledToolCallRate: share(sampled, calledTool),
    transcripts: greedy.slice(0, 3).map(transcript),
  };
}

const numbers = ({
  accuracy,
  toolCallRate,
  sampledAccuracy,
  sampledToolCallRate,
}: EvalNumbers): EvalNumbers => ({
  accuracy,
  toolCallRate,
  sampledAccuracy,
  sampledToolCallRate,
});

async function runArm(
  config: CalculatorDemoConfig,
  initial: Checkpoint,
  withCalculator: boolean,
  log: (line: string) => void,
): Promise<ArmResult> {
  const started = performance.now();
  const arm = withCalculator ? 'with-calculator' : 'without-calculator';
  const tokenizer = tokenizerOf(initial.tokenizer!);
  const tools: ToolSpec[] = withCalculator ? [createCalculatorTool()] : [];
  const demos = problems(config.demonstrations, 'demonstrations', config.seed);
  const sequences = demos.flatMap((problem, index) => {
    const useTool = withCalculator && index < Math.round(config.toolDemoShare * demos.length);
    const turns: DemoTurn[] = useTool
      ? [
          { assistant: toolCall(problem), tool: String(problem.product) },
          { assistant: String(problem.product) },
        ]
      : [{ assistant: String(problem.product) }];
    return demonstrationSequences(
      tokenizer,
      [{ role: 'user', content: question(problem) }],
      tools,
      turns,
    );
  });
  const sft = await warmStart({
    checkpoint: initial,
    sequences,
    steps: config.sftSteps,
    batchSize: config.sftBatchSize,
    learningRate: config.sftLearningRate,
    seed: config.seed,
  });
  const heldOut = problems(config.heldOut, 'held-out', config.seed);
  const before = await evaluateArm(sft.checkpoint, heldOut, withCalculator, config.temperature);
  log(
    `${arm}: warm start accuracy ${(100 * before.accuracy).toFixed(1)}%, tool-call rate ${(100 * before.toolCallRate).toFixed(1)}%`,
  );
  const model = await createLlamaModel(sft.checkpoint);
  const sampler = await createOnnxSampler({ checkpoint: sft.checkpoint, workers: 1, threads: 1 });
  const curve: ArmResult['curve'] = [];
  try {
    const train = problems(config.grpoSteps * config.promptsPerStep, 'train', config.seed);
    const grpo = await createGrpoTrainer({
      model,
      sampler,
      dataset: train.map((problem, index) => ({
        id: `p${index}`,
        prompt: question(problem),
        answer: problem.product,
      })),
      environment: calculatorEnvironment(withCalculator),
      config: {
        maxSteps: config.grpoSteps,
        promptsPerStep: config.promptsPerStep,
        groupSize: config.groupSize,
        maxNewTokens: MAX_NEW_TOKENS,
        maxTurns: MAX_TURNS,
        maxTotalTokens: MAX_TOTAL_TOKENS,
        temperature: config.temperature,
        seed: config.seed,
        schedule: { learningRate: config.grpoLearningRate },
        maxGradNorm: 1,
        quiet: true,
      },
      onStep: (record) => {
        const metrics = record.metrics as Record<string, number>;
        curve.push({
          step: record.step,
          reward: metrics['reward/mean'] ?? 0,
          toolCallRate: Math.min(1, metrics['tools/calls_per_trajectory'] ?? 0),
          turns: metrics['turns/mean'] ?? 0,
        });
      },
    });
    await grpo.train();
    grpo.dispose();
    const trained = { ...sft.checkpoint, tensors: model.toCheckpoint().tensors };
    const after = await evaluateArm(trained, heldOut, withCalculator, config.temperature);
    log(
      `${arm}: after GRPO accuracy ${(100 * after.accuracy).toFixed(1)}% (sampled ${(100 * after.sampledAccuracy).toFixed(1)}%), tool-call rate ${(100 * after.toolCallRate).toFixed(1)}% (sampled ${(100 * after.sampledToolCallRate).toFixed(1)}%)`,
    );
    return {
      arm,
      warmStart: { ...numbers(before), sftLoss: sft.finalLoss },
      final: numbers(after),
      curve,
      transcripts: after.transcripts,
      timeMs: performance.now() - started,
    };
  } finally {
    await sampler.close();
    model.dispose();
  }
}

/**
 * The learning demo: a small model trained from scratch cannot multiply 4-digit numbers in its
 * head; with a calculator tool, a short warm start on a few demonstrations and GRPO teach it to
 * call the tool. Both arms start from the same random model and tokenizer and get the same budget
 * (warm-start steps, GRPO steps, prompts, group size); held-out accuracy is exact match, greedy.
 */
export async function runCalculatorDemo(
  config: CalculatorDemoConfig,
  log: (line: string) => void,
): Promise<CalculatorDemoResult> {
  const started = performance.now();
  const corpus = problems(64, 'corpus', config.seed).flatMap((problem) => [
    `<|im_start|>system\ntools: calculator<|im_end|>\n<|im_start|>user\n${question(problem)}<|im_end|>\n<|im_start|>assistant\n`,
    `${toolCall(problem)}<|im_end|>\n<|im_start|>user\n<tool_response>\n${problem.product}\n</tool_response><|im_end|>\n`,
  ]);
  const tokenizerFiles = buildChatTokenizer(corpus, 120);
  const initial = randomCheckpoint(config.model, tokenizerFiles, config.seed);
  const arms: ArmResult[] = [];
  for (const withCalculator of process.env.ONLY_TOOL ? [true] : [true, false])
    arms.push(await runArm(config, initial, withCalculator, log));
  return { config, arms, timeMs: performance.now() - started };
}
