import { readFile } from 'node:fs/promises';
import { ErrorCode } from '@rlvr/core';
import {
  defaultKs,
  majorityVote,
  meanAccuracyCurve,
  parseRecords,
  type VoteRecord,
} from '@rlvr/voting';
import { ConfigError } from '../errors/config-error.js';
import { DatasetError } from '../errors/dataset-error.js';
import type { Command, CommandContext } from './command.js';
import { checkOutput, openOutput } from './sampling.js';

/** `rlvr generate` output lines (`{id, completions: [{text}], answer?}`) as vote records. */
function fromGenerate(line: Record<string, unknown>): VoteRecord | undefined {
  if (!Array.isArray(line.completions)) return undefined;
  return {
    id: line.id as string,
    samples: (line.completions as { text: string }[]).map((completion) => completion.text),
    ...(typeof line.answer === 'string' || typeof line.answer === 'number'
      ? { gold: String(line.answer) }
      : {}),
  };
}

function readVoteRecords(path: string, text: string): VoteRecord[] {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const lines = body.split(/\r?\n/);
  const first = lines.find((line) => line.trim() !== '');
  try {
    if (first !== undefined && fromGenerate(JSON.parse(first) as Record<string, unknown>)) {
      return lines.flatMap((line, index) => {
        if (line.trim() === '') return [];
        const record = fromGenerate(JSON.parse(line) as Record<string, unknown>);
        if (!record)
          throw new DatasetError({
            file: path,
            line: index + 1,
            message: 'expected an rlvr generate line {id, completions}',
          });
        return [record];
      });
    }
    return parseRecords(lines.join('\n'));
  } catch (error) {
    if (DatasetError.isInstance(error)) throw error;
    const match = /line (\d+)/.exec((error as Error).message);
    throw new DatasetError({
      file: path,
      ...(match ? { line: Number(match[1]) } : {}),
      message: (error as Error).message,
      cause: error,
    });
  }
}

export const voteCommand: Command = {
  name: 'vote',
  summary:
    'majority vote over sampled answers, with pass@k / maj@k when gold answers are given (@rlvr/voting)',
  usage: 'INPUT.jsonl [--out votes.jsonl] [--ks 1,2,4]',
  positionals: { names: 'INPUT.jsonl', min: 1, max: 1 },
  flags: {
    sample: {
      type: 'boolean',
      help: '     sample the answers from a model first (config keys as rlvr generate; see vote --sample --help)',
    },
    out: { type: 'string', help: 'FILE  write one vote per line here' },
    ks: { type: 'string', help: 'LIST  the k values of the curve (default 1, 2, 4, … n)' },
  },
  details: `INPUT: rlvr generate output ({id, completions, answer?}) or rlvr-vote records
({id, samples, gold?}). Answers are extracted and compared as @rlvr/voting's defaults do (final
answer, math equivalence).`,
  example: `rlvr generate --config generate.yaml --set out=samples.jsonl
rlvr vote samples.jsonl --ks 1,2,4 --out votes.jsonl`,
  async run(context) {
    const input = context.positionals[0]!;
    const out = context.flags.out as string | undefined;
    if (out !== undefined) checkOutput(out, context.overwrite);
    let text: string;
    try {
      text = await readFile(input, 'utf8');
    } catch (error) {
      throw new DatasetError({ file: input, message: 'cannot read the file', cause: error });
    }
    const records = readVoteRecords(input, text);
    await printVotes(context, records, out);
    return 0;
  },
};

/**
 * Votes per record (answer, share, votes) to stdout and `out`, then the pass@k / maj@k table of
 * the records with gold answers; `ks` is the `--ks` flag.
 */
export async function printVotes(
  context: CommandContext,
  records: readonly VoteRecord[],
  out: string | undefined,
): Promise<void> {
  const { io } = context;
  const withGold = records.filter(
    (record): record is VoteRecord & { gold: string } => typeof record.gold === 'string',
  );
  const minN = Math.min(...records.map((record) => record.samples.length));
  let ks = defaultKs(minN);
  if (typeof context.flags.ks === 'string') {
    ks = context.flags.ks.split(',').map((part) => Number(part.trim()));
    const bad = ks.find((k) => !Number.isInteger(k) || k < 1 || k > minN);
    if (bad !== undefined) {
      throw new ConfigError({
        key: '--ks',
        message: `expected integers in [1, ${minN}] (the smallest sample count), got ${bad}`,
        code: ErrorCode.INVALID_ARGUMENT,
      });
    }
  }
  const file = out === undefined ? undefined : await openOutput(out, context.overwrite);
  io.stdout(`${'id'.padEnd(16)} ${'answer'.padEnd(20)} share  votes\n`);
  try {
    for (const record of records) {
      const result = majorityVote(record.samples);
      io.stdout(
        `${String(record.id).slice(0, 16).padEnd(16)} ${String(result.answer).slice(0, 20).padEnd(20)} ${result.share.toFixed(2)}  ${String(result.votes).padStart(5)}\n`,
      );
      await file?.write(
        JSON.stringify({
          id: record.id,
          answer: result.answer,
          share: result.share,
          votes: result.votes,
          ...(record.gold === undefined ? {} : { gold: record.gold }),
        }),
      );
    }
  } finally {
    await file?.close();
  }
  if (withGold.length > 0) {
    io.stdout(
      `\n${withGold.length} records with gold answers:\n${'k'.padStart(4)}  pass@k   maj@k\n`,
    );
    for (const point of meanAccuracyCurve(withGold, { ks })) {
      io.stdout(
        `${String(point.k).padStart(4)}  ${point.passAtK.toFixed(4)}  ${point.majAtK.toFixed(4)}\n`,
      );
    }
  }
}
