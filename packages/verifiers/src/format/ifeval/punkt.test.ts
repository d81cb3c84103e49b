import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { punktSentences, punktSpans } from './punkt.js';
import { countCapitalWords } from './text.js';

type Case = { set: string; text: string; spans: [number, number][] };

const { cases } = JSON.parse(
  readFileSync(new URL('./fixtures/punkt-nltk.json', import.meta.url), 'utf8'),
) as { cases: Case[] };

describe('punktSpans (NLTK Punkt, English model)', () => {
  it("should split every recorded text exactly as NLTK's PunktSentenceTokenizer does", () => {
    expect(cases.length).toBeGreaterThan(1000);
    const failures: string[] = [];
    for (const item of cases) {
      const spans = punktSpans(item.text);
      if (JSON.stringify(spans) !== JSON.stringify(item.spans)) {
        failures.push(`${item.set}: ${JSON.stringify(item.text.slice(0, 80))}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('should follow the rules IFEval relies on: abbreviations, initials, decimals, ellipses, quotes', () => {
    expect(punktSentences('Dr. Smith arrived at 3 p.m. on Friday. He left.')).toEqual([
      'Dr. Smith arrived at 3 p.m. on Friday.',
      'He left.',
    ]);
    expect(punktSentences('J. R. R. Tolkien wrote it. It is 3.5 cm long.')).toHaveLength(2);
    expect(punktSentences('He paused... then spoke. "Is it true?" he asked.')).toEqual([
      'He paused... then spoke.',
      '"Is it true?"',
      'he asked.',
    ]);
    expect(punktSentences('(This is a note.) Next one.')).toEqual([
      '(This is a note.)',
      'Next one.',
    ]);
    expect(punktSentences('Steps:\n1. mix it\n2. bake it.')).toHaveLength(1);
    expect(punktSentences('')).toEqual([]);
    expect(punktSentences('   \n ')).toEqual([]);
  });

  it('should be linear on long and hostile inputs', () => {
    for (const input of [
      'a. '.repeat(100_000),
      '.'.repeat(300_000),
      '"'.repeat(300_000),
      'Mr. '.repeat(80_000),
    ]) {
      const start = performance.now();
      punktSpans(input);
      expect(performance.now() - start).toBeLessThan(3000);
    }
  });
});

describe("countCapitalWords (IFEval's capital_word_frequency: nltk word_tokenize, isupper)", () => {
  it("should count what NLTK's word_tokenize counts, contractions and curly apostrophes included", () => {
    const recorded = JSON.parse(
      readFileSync(new URL('./fixtures/capital-words-nltk.json', import.meta.url), 'utf8'),
    ) as { cases: { text: string; count: number }[] };
    const misses = recorded.cases.filter((item) => countCapitalWords(item.text) !== item.count);
    expect(misses.map((item) => item.text.slice(0, 60))).toEqual([]);
    expect(countCapitalWords('I CANNOT go. WE’RE HERE.')).toBe(6); // NLTK: I CAN NOT WE RE HERE
  });
});
