import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkIfeval } from './evaluate.js';
import type { IfevalSemantics } from './kwargs.js';
import { type LanguageDetector, loadLanguageDetector } from './language.js';
import { IFEVAL_INSTRUCTION_IDS, type IfevalInstructionId } from './registry.js';

type Case = {
  id: IfevalInstructionId;
  kwargs: Record<string, unknown>;
  response: string;
  strict: boolean;
  loose: boolean;
  note: string;
  semantics?: IfevalSemantics;
};

const { cases } = JSON.parse(
  readFileSync(new URL('./fixtures/conformance.json', import.meta.url), 'utf8'),
) as { cases: Case[] };

let detector: LanguageDetector;
beforeAll(async () => {
  detector = await loadLanguageDetector();
}, 30_000);

describe('IFEval conformance (hand-worked from IFEval instructions.py / evaluation_lib.py)', () => {
  it('should cover all 25 instruction ids with a passing and a failing case each', () => {
    expect(IFEVAL_INSTRUCTION_IDS).toHaveLength(25);
    for (const id of IFEVAL_INSTRUCTION_IDS) {
      const mine = cases.filter((item) => item.id === id);
      expect(
        mine.some((item) => item.strict),
        `${id} has a strict pass`,
      ).toBe(true);
      expect(
        mine.some((item) => !item.loose),
        `${id} has a loose fail`,
      ).toBe(true);
    }
  });

  it.each(IFEVAL_INSTRUCTION_IDS)('should decide every %s case, strict and loose', (id) => {
    for (const item of cases.filter((entry) => entry.id === id)) {
      const result = checkIfeval(item.response, [{ id, kwargs: item.kwargs }], {
        detector,
        semantics: item.semantics ?? 'hardened',
      });
      const label = `${item.note}: ${JSON.stringify(item.response).slice(0, 60)}`;
      expect(result.results[0]!.strict, `strict ${label}`).toBe(item.strict);
      expect(result.results[0]!.loose, `loose ${label}`).toBe(item.loose);
    }
  });
});
