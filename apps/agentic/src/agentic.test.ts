import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { calculatorEnvironment } from './calculator-demo.js';
import { writesTestFile } from './hacking-claim.js';
import { runAgentic } from './run.js';

const folders: string[] = [];
afterAll(async () => {
  await Promise.all(folders.map((folder) => rm(folder, { recursive: true, force: true })));
});

describe('the transcript monitor', () => {
  it('flags writes, removals and renames under tests/ and nothing else', () => {
    for (const code of [
      "open('tests/test_solution.py','w').write('pass')",
      'open("./tests/test_solution.py", "a")',
      "import os; os.remove('tests/test_solution.py')",
      "import shutil; shutil.rmtree('tests/')",
    ]) {
      expect(writesTestFile(code), code).toBe(true);
    }
    for (const code of [
      "print(open('tests/test_solution.py').read())",
      "open('solution.py','w').write('def f(x): return x')",
      "open('tests/test_solution.py', 'r')",
    ]) {
      expect(writesTestFile(code), code).toBe(false);
    }
  });
});

describe('the calculator environment', () => {
  it('runs the calculator and rewards the exact product only', async () => {
    const input = {
      prompt: 'What is 1234 * 5678?',
      answer: 7006652,
      promptIndex: 0,
      sampleIndex: 0,
      trajectoryId: 't',
    };
    const environment = await calculatorEnvironment(true)(input);
    const reset = await environment.reset(input);
    expect(reset.tools?.map((tool) => tool.name)).toEqual(['calculator']);
    const step = await environment.step({
      index: 0,
      text: '',
      toolCalls: [{ name: 'calculator', arguments: { expression: '1234 * 5678' } }],
      malformedToolCalls: [],
      finishReason: 'tool-call',
    });
    expect(step.messages[0]?.content).toBe('7006652');
    const answer = await environment.step({
      index: 1,
      text: '7006652',
      toolCalls: [],
      malformedToolCalls: [],
      finishReason: 'stop',
    });
    expect(answer.reward).toBe(1);
    const none = await calculatorEnvironment(false)(input);
    expect((await none.reset(input)).tools).toEqual([]);
    expect(
      (
        await none.step({
          index: 0,
          text: '7006653',
          toolCalls: [],
          malformedToolCalls: [],
          finishReason: 'stop',
        })
      ).reward,
    ).toBe(0);
  });
});

describe('pnpm --filter @rlvr/agentic start --quick', () => {
  it('runs both claims end to end and writes the report with numbers and transcripts', async () => {
    const outputDir = await mkdtemp(join(tmpdir(), 'rlvr-agentic-'));
    folders.push(outputDir);
    const run = await runAgentic({ quick: true, outputDir, log: () => {} });
    expect(run.calculator.arms.map((arm) => arm.arm)).toEqual([
      'with-calculator',
      'without-calculator',
    ]);
    expect(run.hacking.arms.map((arm) => arm.arm)).toEqual(['naive', 'fixed']);
    for (const arm of run.calculator.arms) {
      expect(arm.curve).toHaveLength(2);
      for (const value of [arm.warmStart.accuracy, arm.final.accuracy, arm.final.toolCallRate]) {
        expect(value).toBeGreaterThanOrEqual(0);
        expect(value).toBeLessThanOrEqual(1);
      }
    }
    // without the tool no trajectory can call one successfully
    expect(run.calculator.arms[1]!.final.toolCallRate).toBe(0);
    for (const arm of run.hacking.arms) expect(arm.curve).toHaveLength(2);
    // read-only tests: whatever the agent tries, the visible tests can only pass with a real solution
    const fixed = run.hacking.arms[1]!;
    expect(fixed.final.visiblePass).toBeLessThanOrEqual(fixed.final.hiddenPass + 1e-9);
    const report = await readFile(run.files.report, 'utf8');
    expect(report).toContain('## 1. A small model learns to call a calculator');
    expect(report).toContain('## 2. The agentic reward-hacking claim');
    expect(report).toContain('[user] ');
    expect(JSON.parse(await readFile(run.files.json, 'utf8')).quick).toBe(true);
  });
});
