import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CORPUS } from './__fixtures__/conformance-corpus.js';
import { mathEquivalent } from './equivalent.js';

describe('mathEquivalent', () => {
  it('should treat 0.5, 1/2 and \\frac{1}{2} as one answer', () => {
    const forms = ['0.5', '1/2', '\\frac{1}{2}', '\\dfrac12', '\\frac{2}{4}', '50\\%', '.5'];
    for (const a of forms) for (const b of forms) expect(mathEquivalent(a, b)).toBe(true);
    expect(mathEquivalent('0.5', '0.6')).toBe(false);
  });

  it('should compare unreadable answers as strings', () => {
    expect(mathEquivalent('\\weird{1', '\\weird{1')).toBe(true);
    expect(mathEquivalent('\\weird{1', '\\weird{2')).toBe(false);
    expect(mathEquivalent('', '')).toBe(false);
  });

  it('should be symmetric on the corpus answers (property)', () => {
    const answers = [...new Set(CORPUS.map(([, , gold]) => gold))];
    fc.assert(
      fc.property(fc.constantFrom(...answers), fc.constantFrom(...answers), (a, b) => {
        expect(mathEquivalent(a, b)).toBe(mathEquivalent(b, a));
      }),
      { seed: 11, numRuns: 500 },
    );
  });

  it('should be reflexive for readable answers', () => {
    for (const [, , gold, expected] of CORPUS) {
      if (expected !== null) expect(mathEquivalent(gold, gold)).toBe(true);
    }
  });

  it('should equate integers written differently (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -1_000_000, max: 1_000_000 }),
        fc.integer({ min: 1, max: 50 }),
        (n, d) => {
          expect(mathEquivalent(`\\frac{${n * d}}{${d}}`, String(n))).toBe(true);
          expect(mathEquivalent(`\\frac{${n * d + 1}}{${d}}`, String(n))).toBe(false);
        },
      ),
      { seed: 3, numRuns: 200 },
    );
  });
});
