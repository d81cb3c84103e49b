import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkIfeval } from './evaluate.js';
import { type LanguageDetector, loadLanguageDetector } from './language.js';
import type { IfevalInstructionId } from './registry.js';

type Case = { text: string; langdetect: string | null };

const { cases } = JSON.parse(
  readFileSync(new URL('./fixtures/langdetect-cases.json', import.meta.url), 'utf8'),
) as { cases: Case[] };

let detector: LanguageDetector;
beforeAll(async () => {
  detector = await loadLanguageDetector();
}, 60_000);

describe('loadLanguageDetector (langdetect, deterministic)', () => {
  it('should name the language langdetect names wherever its answer does not depend on its seed', () => {
    expect(cases.length).toBeGreaterThan(700);
    const misses = cases
      .filter((item) => detector.detect(item.text) !== item.langdetect)
      .map((item) => `${item.langdetect}: ${item.text}`);
    // one near tie: langdetect's sampling says hu, the full likelihood says so by 0.07 nats
    expect(misses).toEqual(['hu: NINGEPENDA KUSAFIRI KWENDA NAIROBI NA FAMILIA YANGU MWAKA UJAO.']);
  });

  it('should read capitals as langdetect does (first letters and endings only)', () => {
    expect(detector.detect('Are hamburgers sandwiches?')).toBe('de');
    expect(detector.detect('WRAP THE ENTIRE RESPONSE WITH DOUBLE QUOTATION MARKS.')).toBe('so');
    expect(detector.detect('Wrap the entire response with double quotation marks.')).toBe('en');
  });

  it('should find nothing where langdetect raises "No features in text"', () => {
    for (const text of ['', '1234 5678', '$$$', ':)', 'https://example.com/a', 'a@b.com']) {
      expect(detector.detect(text)).toBeNull();
    }
  });

  it('should be deterministic and linear', () => {
    const text = 'The quick brown fox jumps over the lazy dog. '.repeat(5000);
    const start = performance.now();
    expect(detector.detect(text)).toBe('en');
    expect(detector.detect(text)).toBe('en');
    expect(performance.now() - start).toBeLessThan(2000);
  });
});

type OracleCase = {
  id: IfevalInstructionId;
  kwargs: Record<string, unknown>;
  response: string;
  strict: boolean;
  loose: boolean;
};

describe("IFEval's sentence and language checks against Google's own code", () => {
  it('should give the verdicts IFEval gives (strict and loose)', () => {
    const oracle = JSON.parse(
      readFileSync(new URL('./fixtures/ifeval-oracle.json', import.meta.url), 'utf8'),
    ) as { cases: OracleCase[] };
    expect(oracle.cases.length).toBeGreaterThan(400);
    const misses = oracle.cases.filter((item) => {
      const result = checkIfeval(item.response, [{ id: item.id, kwargs: item.kwargs }], {
        detector,
        semantics: 'official',
      });
      return result.strict !== item.strict || result.loose !== item.loose;
    });
    expect(misses.map((item) => `${item.id}: ${item.response.slice(0, 60)}`)).toEqual([]);
  });
});
