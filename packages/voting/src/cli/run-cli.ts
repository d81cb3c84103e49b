import { existsSync } from 'node:fs';
import { readFile, realpath, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { InvalidArgumentError } from '@rlvr/core';
import { defaultKs, meanAccuracyCurve } from '../estimators/curves.js';
import { majorityVote } from '../vote/majority-vote.js';

/** One input record of the CLI (one JSON object per line). */
export type VoteRecord = { id: string | number; samples: string[]; gold?: string };

const USAGE = `usage: rlvr-vote <input.jsonl> [--out votes.jsonl] [--ks 1,2,4,8]

Reads one JSON object per line: {"id": ..., "samples": ["...", ...], "gold": "..."?}
Prints each record's majority answer, its share of the votes, the margin over the runner-up and the
entropy of the vote (nats; abstain on a low margin or a high entropy); --out writes them with the
whole distribution (each answer's count and share). With gold answers, a pass@k / maj@k table.`;

/**
 * The `rlvr-vote` command. Returns the exit code; writes to the given streams.
 * @internal exported for tests
 */
export async function runVoteCli(
  argv: readonly string[],
  io: { stdout: (line: string) => void; stderr: (line: string) => void },
): Promise<number> {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        out: { type: 'string' },
        ks: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    io.stderr(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  if (parsed.values.help || parsed.positionals.length !== 1) {
    (parsed.values.help ? io.stdout : io.stderr)(USAGE);
    return parsed.values.help ? 0 : 2;
  }
  const path = parsed.positionals[0]!;
  const out = parsed.values.out === undefined ? undefined : String(parsed.values.out);
  // Every flag is checked before anything is read or written.
  let requestedKs: number[] | undefined;
  try {
    requestedKs = parsed.values.ks ? parseKs(String(parsed.values.ks), Infinity) : undefined;
  } catch (error) {
    io.stderr(`rlvr-vote: ${(error as Error).message}`);
    return 2;
  }
  if (!existsSync(path)) {
    io.stderr(`rlvr-vote: the input file '${path}' does not exist`);
    return 1;
  }
  if (out !== undefined) {
    const problem = await checkOutPath(out, [path]);
    if (problem) {
      io.stderr(`rlvr-vote: ${problem}`);
      return 2;
    }
  }
  let records: VoteRecord[];
  try {
    records = parseRecords(await readFile(path, 'utf8'));
  } catch (error) {
    io.stderr(`rlvr-vote: ${(error as Error).message}`);
    return 1;
  }
  const withGold = records.filter(
    (record): record is VoteRecord & { gold: string } => typeof record.gold === 'string',
  );
  let ks: number[] = [];
  if (withGold.length > 0) {
    const minN = Math.min(...withGold.map((record) => record.samples.length));
    try {
      ks = requestedKs ? parseKs(requestedKs.join(','), minN) : defaultKs(minN);
    } catch (error) {
      io.stderr(`rlvr-vote: ${(error as Error).message}`);
      return 2;
    }
  }
  const outputs = records.map((record) => {
    const result = majorityVote(record.samples);
    return {
      id: record.id,
      answer: result.answer,
      share: result.share,
      margin: result.margin,
      entropy: result.entropy,
      votes: result.votes,
      discarded: result.discarded,
      clusters: result.clusters.map((cluster) => ({
        answer: cluster.answer,
        count: cluster.count,
        share: cluster.share,
      })),
      ...(record.gold === undefined ? {} : { gold: record.gold }),
    };
  });
  printVotes(outputs, io);
  if (withGold.length > 0) printCurve(withGold, ks, io);
  if (out !== undefined) {
    await writeFile(out, `${outputs.map((output) => JSON.stringify(output)).join('\n')}\n`);
    io.stdout(`\nwrote ${outputs.length} votes to ${out}`);
  }
  return 0;
}

type Io = { stdout: (line: string) => void; stderr: (line: string) => void };

function printVotes(
  outputs: readonly {
    id: string | number;
    answer: string | null;
    share: number;
    margin: number;
    entropy: number;
    votes: number;
    discarded: number;
    clusters: readonly { answer: string; share: number }[];
  }[],
  io: Io,
): void {
  io.stdout(
    `${'id'.padEnd(16)} ${'answer'.padEnd(24)} share  margin  entropy  votes  discarded  distribution`,
  );
  for (const output of outputs) {
    const distribution = output.clusters
      .map((cluster) => `${cluster.answer.slice(0, 12)}:${cluster.share.toFixed(2)}`)
      .join(' ');
    io.stdout(
      `${String(output.id).slice(0, 16).padEnd(16)} ${String(output.answer).slice(0, 24).padEnd(24)} ${output.share.toFixed(2)}  ${output.margin.toFixed(2).padStart(6)}  ${output.entropy.toFixed(3).padStart(7)}  ${String(output.votes).padStart(5)}  ${String(output.discarded).padStart(9)}  ${distribution}`,
    );
  }
}

function printCurve(
  records: readonly { samples: string[]; gold: string }[],
  ks: number[],
  io: Io,
): void {
  const curve = meanAccuracyCurve(records, { ks });
  io.stdout(`\n${records.length} records with gold answers:`);
  io.stdout(`${'k'.padStart(4)}  pass@k   maj@k`);
  for (const point of curve) {
    io.stdout(
      `${String(point.k).padStart(4)}  ${(100 * point.passAtK).toFixed(1).padStart(5)}%  ${(100 * point.majAtK).toFixed(1).padStart(5)}%`,
    );
  }
}

/** The real path `path` has or would have (its folder's real path + its name when it does not exist). */
async function realTarget(path: string): Promise<string> {
  if (existsSync(path)) return realpath(path);
  const folder = dirname(resolve(path));
  return join(existsSync(folder) ? await realpath(folder) : folder, basename(path));
}

/**
 * Why `out` cannot be written (it is one of the inputs, a folder, or its folder is missing), or
 * `undefined`. Paths are compared after resolving symbolic links.
 */
async function checkOutPath(out: string, inputs: readonly string[]): Promise<string | undefined> {
  const target = await realTarget(out);
  for (const input of inputs) {
    if ((await realTarget(input)) === target) {
      return `refusing to write --out '${out}': it is the input file '${input}' (it would be overwritten); choose another --out path`;
    }
  }
  if (existsSync(target) && (await stat(target)).isDirectory()) {
    return `--out '${out}' is a folder; give a file path`;
  }
  if (!existsSync(dirname(target))) {
    return `the folder of --out '${out}' does not exist`;
  }
  return undefined;
}

/** Parses JSONL vote records, naming the line of any problem. */
export function parseRecords(text: string): VoteRecord[] {
  const records: VoteRecord[] = [];
  text.split('\n').forEach((line, index) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new InvalidArgumentError({
        parameter: `line ${index + 1}`,
        value: line,
        expected: 'a JSON object',
        cause: error,
      });
    }
    const record = value as Partial<VoteRecord>;
    const ok =
      record !== null &&
      typeof record === 'object' &&
      (typeof record.id === 'string' || typeof record.id === 'number') &&
      Array.isArray(record.samples) &&
      record.samples.every((sample) => typeof sample === 'string') &&
      (record.gold === undefined || typeof record.gold === 'string');
    if (!ok) {
      throw new InvalidArgumentError({
        parameter: `line ${index + 1}`,
        value: line,
        expected: '{"id": string|number, "samples": string[], "gold"?: string}',
      });
    }
    records.push(record as VoteRecord);
  });
  if (records.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'input',
      value: text,
      expected: 'at least one JSONL record',
    });
  }
  return records;
}

function parseKs(text: string, maxK: number): number[] {
  const expected = Number.isFinite(maxK)
    ? `integers in [1, ${maxK}] (the smallest sample count)`
    : 'comma-separated integers >= 1';
  return text.split(',').map((part) => {
    const k = Number(part.trim());
    if (!Number.isInteger(k) || k < 1 || k > maxK) {
      throw new InvalidArgumentError({
        parameter: '--ks',
        value: part,
        expected,
      });
    }
    return k;
  });
}
