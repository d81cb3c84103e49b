import { mkdtemp, readFile, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseRecords, runVoteCli } from './run-cli.js';

async function run(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runVoteCli(argv, {
    stdout: (line) => out.push(line),
    stderr: (line) => err.push(line),
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('rlvr-vote', () => {
  it('should print votes and a pass@k / maj@k table, and write JSONL', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rlvr-vote-'));
    const input = join(dir, 'in.jsonl');
    const output = join(dir, 'out.jsonl');
    await writeFile(
      input,
      [
        JSON.stringify({
          id: 'q1',
          samples: ['\\boxed{4}', '\\boxed{4}', '\\boxed{5}', '\\boxed{4}'],
          gold: '4',
        }),
        JSON.stringify({
          id: 'q2',
          samples: ['\\boxed{1}', '\\boxed{2}', '\\boxed{2}', 'no answer'],
          gold: '1',
        }),
      ].join('\n'),
    );
    const { code, out } = await run([input, '--out', output, '--ks', '1,4']);
    expect(code).toBe(0);
    expect(out).toMatch(/q1\s+4\s+0\.75/);
    expect(out).toMatch(/q2\s+2\s+0\.67/);
    // pass@1 = (3/4 + 1/4) / 2 = 50%; maj@4 = (1 + 0) / 2 = 50%; pass@4 = 100%.
    expect(out).toMatch(/\n\s+1\s+50\.0%\s+50\.0%/);
    expect(out).toMatch(/\n\s+4\s+100\.0%\s+50\.0%/);
    const written = (await readFile(output, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(written[0]).toMatchObject({ id: 'q1', answer: '4', votes: 4, discarded: 0 });
    expect(written[1]).toMatchObject({ id: 'q2', answer: '2', discarded: 1 });
  });

  it('should print and write the distribution, margin and entropy of each vote', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rlvr-vote-'));
    const input = join(dir, 'in.jsonl');
    const output = join(dir, 'out.jsonl');
    await writeFile(
      input,
      `${JSON.stringify({ id: 'q1', samples: ['\\boxed{4}', '\\boxed{4}', '\\boxed{5}', '\\boxed{4}'] })}\n`,
    );
    const { code, out } = await run([input, '--out', output]);
    expect(code).toBe(0);
    // shares 3/4 and 1/4: margin 1/2, entropy −(¾ ln ¾ + ¼ ln ¼) = 0.5623 nats
    expect(out).toMatch(/share\s+margin\s+entropy/);
    expect(out).toMatch(/q1\s+4\s+0\.75\s+0\.50\s+0\.562\s+4\s+0\s+4:0\.75 5:0\.25/);
    const [written] = (await readFile(output, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(written.margin).toBeCloseTo(0.5, 12);
    expect(written.entropy).toBeCloseTo(-(0.75 * Math.log(0.75) + 0.25 * Math.log(0.25)), 12);
    expect(written.clusters).toEqual([
      { answer: '4', count: 3, share: 0.75 },
      { answer: '5', count: 1, share: 0.25 },
    ]);
  });

  it('should explain usage and bad input', async () => {
    expect((await run([])).code).toBe(2);
    expect((await run(['--help'])).code).toBe(0);
    const missing = await run(['/nonexistent/file.jsonl']);
    expect(missing.code).toBe(1);
    expect(() => parseRecords('{"id": 1}')).toThrow(/line 1/);
    expect(() => parseRecords('not json')).toThrow(/line 1/);
    expect(() => parseRecords('\n\n')).toThrow(/at least one/);
  });

  it('should refuse --out equal to the input (also through a symlink or another spelling), untouched', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rlvr-vote-'));
    const input = join(dir, 'in.jsonl');
    const content = `${JSON.stringify({ id: 'q1', samples: ['\\boxed{4}'], gold: '4' })}\n`;
    await writeFile(input, content);
    await symlink(input, join(dir, 'link.jsonl'));
    for (const out of [input, join(dir, '.', 'in.jsonl'), join(dir, 'link.jsonl')]) {
      const result = await run([input, '--out', out]);
      expect(result.code).toBe(2);
      expect(result.err).toMatch(/refusing to write --out .*it is the input file/);
      expect(result.out).toBe('');
      expect(await readFile(input, 'utf8')).toBe(content);
    }
  });

  it('should validate every flag before writing anything', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rlvr-vote-'));
    const input = join(dir, 'in.jsonl');
    await writeFile(input, `${JSON.stringify({ id: 'q1', samples: ['\\boxed{4}'] })}\n`);
    const output = join(dir, 'out.jsonl');
    const badKs = await run([input, '--out', output, '--ks', '1,x']);
    expect(badKs.code).toBe(2);
    expect(badKs.err).toMatch(/--ks/);
    const missingFolder = await run([input, '--out', join(dir, 'nope', 'out.jsonl')]);
    expect(missingFolder.code).toBe(2);
    expect(missingFolder.err).toMatch(/does not exist/);
    const folder = await run([input, '--out', dir]);
    expect(folder.code).toBe(2);
    await expect(readFile(output, 'utf8')).rejects.toThrow();
  });
});
