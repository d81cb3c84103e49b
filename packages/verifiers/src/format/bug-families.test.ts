import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkInstructions, type InstructionConstraint } from './instructions.js';

type Case = {
  family: string;
  response: string;
  constraint: InstructionConstraint;
  expected: boolean;
};

const { cases } = JSON.parse(
  readFileSync(new URL('./fixtures/bug-families.json', import.meta.url), 'utf8'),
) as { cases: Case[] };

describe('format bug families of issue 12 (fixture written before the fix)', () => {
  const families = [...new Set(cases.map((item) => item.family))];
  it.each(families)('should decide every %s case as expected', (family) => {
    for (const item of cases.filter((entry) => entry.family === family)) {
      const result = checkInstructions(item.response, [item.constraint]);
      expect(result.correct, `${JSON.stringify(item.response)} ${item.constraint.type}`).toBe(
        item.expected,
      );
    }
  });
});
