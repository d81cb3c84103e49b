import { readFile } from 'node:fs/promises';
import { InvalidArgumentError, validateOptions } from '@rlvr/core';
import {
  type IfevalCheckOptions,
  type IfevalResult,
  prepareInstructions,
  readCheckOptions,
  runPrepared,
} from './evaluate.js';
import { loadLanguageDetector } from './language.js';
import type { IfevalInstructionId } from './registry.js';

/** One row of IFEval's `input_data.jsonl`, read as it is. */
export type IfevalRow = {
  key: number | string;
  prompt: string;
  instruction_id_list: string[];
  kwargs: (Record<string, unknown> | null)[];
};

/** One row of a responses file: `{ prompt, response }` (IFEval's `input_response_data`). */
export type IfevalResponse = { prompt: string; response: string };

/** Followed / total, strict and loose. */
export type IfevalTally = { total: number; strict: number; loose: number };

/** IFEval's four accuracies, with per-instruction and per-category breakdowns. */
export type IfevalReport = {
  prompts: number;
  instructions: number;
  /** Prompt-level and instruction-level accuracy on the responses as they are. */
  strict: { prompt: number; instruction: number };
  /** The same with IFEval's loose variants. */
  loose: { prompt: number; instruction: number };
  /** Per instruction id (IFEval's tier 1). */
  byInstruction: Partial<Record<IfevalInstructionId, IfevalTally>>;
  /** Per category, the part of the id before `:` (IFEval's tier 0). */
  byCategory: Record<string, IfevalTally>;
  rows: (IfevalResult & { key: number | string; prompt: string })[];
};

const FUNCTION = 'evaluateIfeval';

function fail(parameter: string, value: unknown, expected: string): never {
  throw new InvalidArgumentError({ parameter, functionName: FUNCTION, value, expected });
}

function parseJsonl(text: string, name: string): Record<string, unknown>[] {
  const rows: Record<string, unknown>[] = [];
  for (const [index, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      fail(`${name} line ${index + 1}`, line.slice(0, 80), `JSON (${(error as Error).message})`);
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      fail(`${name} line ${index + 1}`, value, 'a JSON object');
    }
    rows.push(value as Record<string, unknown>);
  }
  return rows;
}

/** Parses IFEval's input JSONL (`key`, `prompt`, `instruction_id_list`, `kwargs`). */
export function parseIfevalInput(text: string): IfevalRow[] {
  return parseJsonl(text, 'input').map((row, index) => {
    const where = `input[${index}]`;
    if (typeof row.prompt !== 'string') fail(`${where}.prompt`, row.prompt, 'a string');
    const ids = row.instruction_id_list;
    if (!Array.isArray(ids)) fail(`${where}.instruction_id_list`, ids, 'an array');
    const kwargs = row.kwargs ?? ids.map(() => null);
    if (!Array.isArray(kwargs) || kwargs.length !== ids.length) {
      fail(`${where}.kwargs`, kwargs, `an array of ${ids.length} kwargs objects`);
    }
    return {
      key: (row.key as number | string | undefined) ?? index,
      prompt: row.prompt,
      instruction_id_list: ids as string[],
      kwargs: kwargs as IfevalRow['kwargs'],
    };
  });
}

/** Parses a responses JSONL of `{ prompt, response }` rows. */
export function parseIfevalResponses(text: string): IfevalResponse[] {
  return parseJsonl(text, 'responses').map((row, index) => {
    if (typeof row.prompt !== 'string') fail(`responses[${index}].prompt`, row.prompt, 'a string');
    if (typeof row.response !== 'string') {
      fail(`responses[${index}].response`, row.response, 'a string');
    }
    return { prompt: row.prompt, response: row.response };
  });
}

function tally(map: Record<string, IfevalTally>, key: string, strict: boolean, loose: boolean) {
  map[key] ??= { total: 0, strict: 0, loose: 0 };
  const entry = map[key];
  entry.total++;
  if (strict) entry.strict++;
  if (loose) entry.loose++;
}

/**
 * Scores responses on IFEval rows as IFEval's `evaluation_main` does: each row's response is found
 * by its prompt; prompt-level accuracy = share of rows with every instruction followed,
 * instruction-level = share of instructions followed; strict and loose. Every row and response
 * is validated before anything is scored.
 *
 * @throws {InvalidArgumentError} for a malformed row, an unknown instruction id or kwarg, or a row
 * whose prompt has no response.
 */
export async function evaluateIfeval(
  rows: readonly IfevalRow[],
  responses: readonly IfevalResponse[],
  options?: IfevalCheckOptions,
): Promise<IfevalReport> {
  const context = readCheckOptions(options, FUNCTION);
  if (!Array.isArray(rows) || rows.length === 0) fail('rows', rows, 'a non-empty array of rows');
  if (!Array.isArray(responses)) fail('responses', responses, 'an array of { prompt, response }');
  const byPrompt = new Map(responses.map((item) => [item.prompt, item.response]));
  const prepared = rows.map((row, index) => {
    const response = byPrompt.get(row.prompt);
    if (response === undefined)
      fail(`rows[${index}]`, row.key, 'a row whose prompt has a response');
    const ids = row.instruction_id_list;
    const kwargs = row.kwargs ?? [];
    if (!Array.isArray(ids) || !Array.isArray(kwargs) || kwargs.length !== ids.length) {
      fail(`rows[${index}].kwargs`, kwargs, 'one kwargs object (or null) per instruction id');
    }
    const list = ids.map((id, at) => ({ id, kwargs: kwargs[at] }));
    return {
      row,
      response,
      instructions: prepareInstructions(list, `rows[${index}].instructions`),
    };
  });
  const needsLanguage = prepared.some((item) => item.instructions.some((entry) => entry.language));
  const detector = context.detector ?? (needsLanguage ? await loadLanguageDetector() : undefined);
  const report: IfevalReport = {
    prompts: rows.length,
    instructions: 0,
    strict: { prompt: 0, instruction: 0 },
    loose: { prompt: 0, instruction: 0 },
    byInstruction: {},
    byCategory: {},
    rows: [],
  };
  let strictFollowed = 0;
  let looseFollowed = 0;
  for (const { row, response, instructions } of prepared) {
    const result = runPrepared(response, instructions, { semantics: context.semantics, detector });
    report.rows.push({ key: row.key, prompt: row.prompt, ...result });
    if (result.strict) report.strict.prompt++;
    if (result.loose) report.loose.prompt++;
    for (const item of result.results) {
      report.instructions++;
      if (item.strict) strictFollowed++;
      if (item.loose) looseFollowed++;
      tally(report.byInstruction as Record<string, IfevalTally>, item.id, item.strict, item.loose);
      tally(report.byCategory, item.id.split(':')[0]!, item.strict, item.loose);
    }
  }
  report.strict = {
    prompt: report.strict.prompt / rows.length,
    instruction: strictFollowed / report.instructions,
  };
  report.loose = {
    prompt: report.loose.prompt / rows.length,
    instruction: looseFollowed / report.instructions,
  };
  return report;
}

/** Options of {@link scoreIfevalFiles}. */
export type IfevalFilesOptions = IfevalCheckOptions & {
  /** Path of IFEval's input JSONL (`input_data.jsonl`). */
  input: string;
  /** Path of the `{ prompt, response }` JSONL. */
  responses: string;
};

/** Reads IFEval's input JSONL and a responses JSONL and scores them with {@link evaluateIfeval}. */
export async function scoreIfevalFiles(options: IfevalFilesOptions): Promise<IfevalReport> {
  const given = validateOptions<IfevalFilesOptions>(options, {
    parameter: 'options',
    functionName: 'scoreIfevalFiles',
    known: ['input', 'responses', 'semantics', 'detector'],
  });
  for (const key of ['input', 'responses'] as const) {
    if (typeof given[key] !== 'string' || given[key] === '') {
      throw new InvalidArgumentError({
        parameter: `options.${key}`,
        functionName: 'scoreIfevalFiles',
        value: given[key],
        expected: 'a file path',
      });
    }
  }
  const [input, responses] = await Promise.all([
    readFile(given.input as string, 'utf8'),
    readFile(given.responses as string, 'utf8'),
  ]);
  const { input: _input, responses: _responses, ...check } = given;
  return evaluateIfeval(parseIfevalInput(input), parseIfevalResponses(responses), check);
}
