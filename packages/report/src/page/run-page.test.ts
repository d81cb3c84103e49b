import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readRunFolder, renderRunReport } from '../index.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'rlvr-page-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const HOSTILE = '</div></td><script>alert(1)</script><img src=x onerror=alert(2)>';

describe('renderRunReport (hostile text)', () => {
  it('should escape every text taken from the run files', async () => {
    // Hand-written on purpose: a trained model can write anything into completions.
    const metric = (step: number) =>
      JSON.stringify({ step, phase: HOSTILE, metrics: { [HOSTILE]: step, loss: null } });
    writeFileSync(join(dir, 'metrics.jsonl'), `${metric(1)}\n${metric(2)}\n{"step":3,"met`);
    writeFileSync(
      join(dir, 'completions.jsonl'),
      `${JSON.stringify({
        step: 1,
        promptId: HOSTILE,
        prompt: HOSTILE,
        completion: HOSTILE,
        reward: 1,
        rewards: { [HOSTILE]: 1 },
        advantage: 0.5,
        finishReason: HOSTILE,
        completionTokens: 3,
        violations: [HOSTILE, 'missing-answer'],
      })}\n`,
    );
    writeFileSync(join(dir, 'config.yaml'), `title: "${HOSTILE}"\n`);
    const html = await renderRunReport(dir, { title: HOSTILE });
    expect(html).not.toContain('<script>alert');
    expect(html).not.toContain('<img');
    expect(html).not.toMatch(/<\/div><\/td><script/);
    expect(html.match(/<script>/g)).toHaveLength(1); // the page's own chart check
    expect(html).toContain('&lt;/div&gt;&lt;/td&gt;&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('<span class="no">&lt;/div&gt;');
    expect(html).toContain('missing-answer</span>');
    expect(html).toContain('metrics.jsonl:3: not JSON (torn last line), skipped');
    // `null` in a metrics line is a non-finite value JSON cannot hold.
    const run = await readRunFolder(dir);
    expect(run.metrics.map((record) => record.metrics.loss)).toEqual([Number.NaN, Number.NaN]);
    expect(html).toMatch(/<code>loss<\/code><\/td><td>[^<]*<\/td><td>2 \(2 non-finite\)/);
  });
});
