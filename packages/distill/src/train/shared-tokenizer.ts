import { InvalidArgumentError } from '@rlvr/core';
import type { ModelConfig, TokenizerFiles } from '@rlvr/model';

/**
 * Checks that a teacher and a student can be distilled into one another token by token: the same
 * vocabulary (tokenizer.json model vocab and added tokens) and the same `vocab_size`.
 * @throws {InvalidArgumentError} `INVALID_ARGUMENT` naming what differs.
 */
export function assertSharedTokenizer(
  teacher: { config: ModelConfig; tokenizer?: TokenizerFiles },
  student: { config: ModelConfig; tokenizer?: TokenizerFiles },
): void {
  const FN = 'assertSharedTokenizer';
  if (teacher.config.vocab_size !== student.config.vocab_size) {
    throw new InvalidArgumentError({
      parameter: 'student.config.vocab_size',
      functionName: FN,
      value: student.config.vocab_size,
      expected: `the teacher's vocab_size ${teacher.config.vocab_size} (teacher and student must share a tokenizer)`,
    });
  }
  if (!teacher.tokenizer || !student.tokenizer) return;
  const vocabOf = (files: TokenizerFiles) => {
    const json = files.json as { model?: { vocab?: unknown }; added_tokens?: unknown };
    return JSON.stringify([json.model?.vocab ?? null, json.added_tokens ?? null]);
  };
  if (vocabOf(teacher.tokenizer) !== vocabOf(student.tokenizer)) {
    throw new InvalidArgumentError({
      parameter: 'student.tokenizer',
      functionName: FN,
      value: '(a different vocabulary)',
      expected: "the teacher's tokenizer vocabulary (teacher and student must share a tokenizer)",
    });
  }
}
