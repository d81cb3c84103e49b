import { readFile } from 'node:fs/promises';
import { ErrorCode, InvalidArgumentError, RlvrError } from '@rlvr/core';

/**
 * One prompt of a GRPO dataset (a JSONL line): `id`, the prompt text, the reference `answer` the
 * reward functions check against, and any other fields (passed to rewards as `metadata`).
 */
export type PromptRecord = {
  id: string;
  prompt: string;
  answer?: unknown;
  [field: string]: unknown;
};

/**
 * Checks an array of {@link PromptRecord}s (unique string ids, string prompts).
 * @throws {InvalidArgumentError} naming the offending record.
 */
export function validatePromptRecords(
  records: unknown,
  functionName: string,
  parameter = 'dataset',
): PromptRecord[] {
  if (!Array.isArray(records) || records.length === 0) {
    throw new InvalidArgumentError({
      parameter,
      functionName,
      value: records,
      expected: 'a non-empty array of { id, prompt, answer? } records (or a JSONL path)',
    });
  }
  const seen = new Set<string>();
  records.forEach((record: unknown, index) => {
    const item = record as Partial<PromptRecord> | null;
    if (item === null || typeof item !== 'object') {
      throw new InvalidArgumentError({
        parameter: `${parameter}[${index}]`,
        functionName,
        value: record,
        expected: 'an object { id, prompt, answer? }',
      });
    }
    if (typeof item.id !== 'string' || item.id.length === 0 || seen.has(item.id)) {
      throw new InvalidArgumentError({
        parameter: `${parameter}[${index}].id`,
        functionName,
        value: item.id,
        expected: 'a unique non-empty string',
      });
    }
    seen.add(item.id);
    if (typeof item.prompt !== 'string' || item.prompt.length === 0) {
      throw new InvalidArgumentError({
        parameter: `${parameter}[${index}].prompt`,
        functionName,
        value: item.prompt,
        expected: 'a non-empty string',
      });
    }
  });
  return records as PromptRecord[];
}

/**
 * Reads a JSONL prompt dataset: one {@link PromptRecord} per non-empty line. A numeric `id` is
 * turned into a string; a record without `id` gets its line number.
 *
 * @example
 * ```ts
 * const dataset = await loadPromptDataset('data/train.jsonl'); // {"id":"1","prompt":"2+2=","answer":"4"}
 * ```
 * @throws {InvalidArgumentError} for a malformed line (naming it) or an invalid record.
 */
export async function loadPromptDataset(path: string): Promise<PromptRecord[]> {
  const functionName = 'loadPromptDataset';
  if (typeof path !== 'string' || path.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'path',
      functionName,
      value: path,
      expected: 'a file path',
    });
  }
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new RlvrError(ErrorCode.INVALID_ARGUMENT, `Cannot read the prompt dataset ${path}`, {
      cause: error,
    });
  }
  const records: PromptRecord[] = [];
  text.split('\n').forEach((line, index) => {
    if (line.trim().length === 0) return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw new InvalidArgumentError({
        parameter: `${path}:${index + 1}`,
        functionName,
        value: line.slice(0, 80),
        expected: 'a JSON object per line',
      });
    }
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      const record = value as Record<string, unknown>;
      if (typeof record.id === 'number') record.id = String(record.id);
      if (record.id === undefined) record.id = String(index + 1);
    }
    records.push(value as PromptRecord);
  });
  return validatePromptRecords(records, functionName, path);
}
