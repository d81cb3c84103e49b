import type { Checkpoint } from '@rlvr/model';
import { correctness } from '../rewards.js';
import { createSampler, type Runtime } from '../runtime.js';
import { ANSWER_OPEN, type ModArithProblem, THINK_CLOSE, THINK_OPEN } from '../task.js';

/** One point of the thinking-budget curve. */
export type BudgetPoint = {
  /** Reasoning tokens allowed (the `<think>` content is cut after this many). */
  budget: number;
  /** Held-out accuracy with the answer forced after the cut. */
  accuracy: number;
  /** Mean tokens spent per answer: `<think>` + reasoning kept + `</think><answer>` + the answer's tokens. */
  tokens: number;
};

/** Budgets B = 0, 2, 4, 8, … below the longest reasoning, then the longest itself. */
export function budgetsUpTo(longest: number): number[] {
  const budgets = [0];
  for (let budget = 2; budget < longest; budget *= 2) budgets.push(budget);
  if (longest > 0) budgets.push(longest);
  return budgets;
}

/**
 * The thinking-budget curve of a policy: it writes its reasoning (temperature 1, `samples` per
 * held-out prompt); for each budget B the reasoning is cut after B tokens, `</think><answer>` is
 * appended, and the policy completes the answer greedily from there. Every character of the
 * reasoning is one token of the task tokenizer, so cutting the text cuts tokens.
 */
export async function thinkingBudgetCurve(
  runtime: Runtime,
  checkpoint: Checkpoint,
  problems: readonly ModArithProblem[],
  options: { maxNewTokens: number; seed: number; samples: number },
): Promise<BudgetPoint[]> {
  const sampler = await createSampler(runtime, checkpoint);
  try {
    const groups = await sampler.sample({
      prompts: problems.map((problem) => problem.prompt),
      n: options.samples,
      maxNewTokens: options.maxNewTokens,
      temperature: 1,
      seed: options.seed,
    });
    const traces = groups.flatMap((group, index) =>
      group.map((completion) => ({
        problem: problems[index]!,
        // A completion without a closed `<think>` reasons with what it wrote before any tag.
        think:
          /<think>(.*?)<\/think>/s.exec(completion.text)?.[1] ??
          completion.text.replace(/<[^>]*>.*$/s, ''),
      })),
    );
    const longest = Math.max(0, ...traces.map((trace) => trace.think.length));
    const points: BudgetPoint[] = [];
    for (const budget of budgetsUpTo(longest)) {
      const cut = traces.map((trace) => trace.think.slice(0, budget));
      const answers = await sampler.sample({
        prompts: traces.map(
          (trace, index) =>
            `${trace.problem.prompt}${THINK_OPEN}${cut[index]}${THINK_CLOSE}${ANSWER_OPEN}`,
        ),
        n: 1,
        maxNewTokens: 4,
        temperature: 0,
      });
      let correct = 0;
      let tokens = 0;
      answers.forEach((group, index) => {
        const answer = group[0]!;
        correct += correctness(`${ANSWER_OPEN}${answer.text}`, traces[index]!.problem.answer);
        tokens += cut[index]!.length + 3 + answer.tokenIds.length;
      });
      points.push({
        budget,
        accuracy: correct / traces.length,
        tokens: tokens / traces.length,
      });
    }
    return points;
  } finally {
    await sampler.close();
  }
}
