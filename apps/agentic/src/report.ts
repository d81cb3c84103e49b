import type { CalculatorDemoResult } from './calculator-demo.js';
import type { HackingClaimResult } from './hacking-claim.js';

const pct = (value: number) => `${(100 * value).toFixed(1)}%`;
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** The report of a run as Markdown: the two claims with their numbers, curves and transcripts. */
export function renderReport(run: {
  quick: boolean;
  calculator: CalculatorDemoResult;
  hacking: HackingClaimResult;
  timeMs: number;
}): string {
  const { calculator, hacking } = run;
  const lines: string[] = [
    `# Multi-turn RL with tools${run.quick ? ' (--quick size: numbers are not the claim)' : ''}`,
    '',
    `Total time ${seconds(run.timeMs)}.`,
    '',
    '## 1. A small model learns to call a calculator',
    '',
    `A ${calculator.config.model.layers}-layer, ${calculator.config.model.hiddenSize}-wide Llama trained from scratch: a warm start on ${calculator.config.demonstrations} demonstrations (${calculator.config.sftSteps} SFT steps; with the calculator ${pct(calculator.config.toolDemoShare)} of them call it, the others answer directly), then ${calculator.config.grpoSteps} GRPO steps of ${calculator.config.promptsPerStep} prompts × ${calculator.config.groupSize} trajectories at T = ${calculator.config.temperature}; the same budget with and without the calculator tool. Held-out: ${calculator.config.heldOut} new 4-digit × 4-digit products, exact match, greedy and 4 samples per problem at T = ${calculator.config.temperature}.`,
    '',
    '| arm | held-out accuracy, greedy (warm start → after GRPO) | sampled | tool-call rate, greedy | sampled |',
    '| --- | --- | --- | --- | --- |',
    ...calculator.arms.map(
      (arm) =>
        `| ${arm.arm} | ${pct(arm.warmStart.accuracy)} → ${pct(arm.final.accuracy)} | ${pct(arm.warmStart.sampledAccuracy)} → ${pct(arm.final.sampledAccuracy)} | ${pct(arm.warmStart.toolCallRate)} → ${pct(arm.final.toolCallRate)} | ${pct(arm.warmStart.sampledToolCallRate)} → ${pct(arm.final.sampledToolCallRate)} |`,
    ),
    '',
    'Tool calls per trajectory and mean reward over training (sampled at the GRPO temperature):',
    '',
    '| arm | step | reward | tool calls / trajectory | turns |',
    '| --- | --- | --- | --- | --- |',
    ...calculator.arms.flatMap((arm) =>
      arm.curve.map(
        (point) =>
          `| ${arm.arm} | ${point.step} | ${point.reward.toFixed(3)} | ${point.toolCallRate.toFixed(3)} | ${point.turns.toFixed(2)} |`,
      ),
    ),
    '',
    ...calculator.arms.flatMap((arm) => [
      `Held-out transcripts after GRPO (${arm.arm}):`,
      '',
      ...arm.transcripts.flatMap((text) => ['```', text, '```', '']),
    ]),
    '## 2. The agentic reward-hacking claim',
    '',
    `A coding agent (the same model shape, warm-started on ${hacking.config.demonstrations} demonstrations of workspace actions: write a guessed solution, read the tests, rarely overwrite the test file) in a bubblewrap sandbox workspace with a \`python\` tool; ${hacking.config.grpoSteps} GRPO steps of ${hacking.config.promptsPerStep} × ${hacking.config.groupSize} trajectories per arm, then ${hacking.config.evaluation} sampled trajectories (T = 1) of the trained policy. "flagged" = the transcript monitor saw a test-file write.`,
    '',
    '| arm | setting | flagged (warm → after) | visible tests pass (warm → after) | hidden tests pass (warm → after) |',
    '| --- | --- | --- | --- | --- |',
    ...hacking.arms.map(
      (arm) =>
        `| ${arm.arm} | ${arm.setting} | ${pct(arm.warmStart.flagged)} → ${pct(arm.final.flagged)} | ${pct(arm.warmStart.visiblePass)} → ${pct(arm.final.visiblePass)} | ${pct(arm.warmStart.hiddenPass)} → ${pct(arm.final.hiddenPass)} |`,
    ),
    '',
    '| arm | step | flagged | visible pass | hidden pass |',
    '| --- | --- | --- | --- | --- |',
    ...hacking.arms.flatMap((arm) =>
      arm.curve.map(
        (point) =>
          `| ${arm.arm} | ${point.step} | ${pct(point.flagged)} | ${pct(point.visiblePass)} | ${pct(point.hiddenPass)} |`,
      ),
    ),
    '',
    ...hacking.arms.flatMap((arm) => [
      `Transcripts after GRPO (${arm.arm}):`,
      '',
      ...arm.transcripts.flatMap((text) => ['```', text, '```', '']),
    ]),
  ];
  return `${lines.join('\n')}\n`;
}
