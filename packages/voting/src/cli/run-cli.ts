import { readFile, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { InvalidArgumentError } from '@rlvr/core';
import { defaultKs, meanAccuracyCurve } from '../estimators/curves.js';
import { majorityVote } from '../vote/majority-vote.js';

/** One input record of the CLI (one JSON object per line). */
export type VoteRecord = { id: string | number; samples: string[]; gold?: string };

const USAGE = `usage: rlvr-vote <input.jsonl> [--out votes.jsonl] [--ks 1,2,4,8]

Reads one JSON object per line: {"id": ..., "samples": ["...", ...], "gold": "..."?}
Prints each record's majority answer and confidence; with gold answers, a pass@k / maj@k table.`;

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
  let records: VoteRecord[];
  try {
    records = parseRecords(await readFile(path, 'utf8'));
  } catch (error) {
    io.stderr(`rlvr-vote: ${(error as Error).message}`);
    return 1;
  }
  const outputs = records.map((record) => {
    const result = majorityVote(record.samples);
    return {
      id: record.id,
      answer: result.answer,
      share: result.share,
      votes: result.votes,
      discarded: result.discarded,
      clusters: result.clusters.map((cluster) => ({
        answer: cluster.answer,
        count: cluster.count,
      })),
      ...(record.gold === undefined ? {} : { gold: record.gold }),
    };
  });
  io.stdout(`${'id'.padEnd(16)} ${'answer'.padEnd(24)} share  votes  discarded`);
  for (const output of outputs) {
    io.stdout(
      `${String(output.id).slice(0, 16).padEnd(16)} ${String(output.answer).slice(0, 24).padEnd(24)} ${output.share.toFixed(2)}  ${String(output.votes).padStart(5)}  ${String(output.discarded).padStart(9)}`,
    );
  }
  const withGold = records.filter(
    (record): record is VoteRecord & { gold: string } => typeof record.gold === 'string',
  );
  if (withGold.length > 0) {
    const minN = Math.min(...withGold.map((record) => record.samples.length));
    let ks: number[];
    try {
      ks = parsed.values.ks ? parseKs(String(parsed.values.ks), minN) : defaultKs(minN);
    } catch (error) {
      io.stderr(`rlvr-vote: ${(error as Error).message}`);
      return 2;
    }
    const curve = meanAccuracyCurve(withGold, { ks });
    io.stdout(`\n${withGold.length} records with gold answers:`);
    io.stdout(`${'k'.padStart(4)}  pass@k   maj@k`);
    for (const point of curve) {
      io.stdout(
        `${String(point.k).padStart(4)}  ${(100 * point.passAtK).toFixed(1).padStart(5)}%  ${(100 * point.majAtK).toFixed(1).padStart(5)}%`,
      );
    }
  }
  if (parsed.values.out) {
    await writeFile(
      String(parsed.values.out),
      `${outputs.map((output) => JSON.stringify(output)).join('\n')}\n`,
    );
    io.stdout(`\nwrote ${outputs.length} votes to ${parsed.values.out}`);
  }
  return 0;
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
  return text.split(',').map((part) => {
    const k = Number(part.trim());
    if (!Number.isInteger(k) || k < 1 || k > maxK) {
      throw new InvalidArgumentError({
        parameter: '--ks',
        value: part,
        expected: `integers in [1, ${maxK}] (the smallest sample count)`,
      });
    }
    return k;
  });
}
