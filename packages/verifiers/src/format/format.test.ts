import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkInstructions,
  countSentences,
  countWords,
  type InstructionConstraint,
} from './instructions.js';
import { checkR1Format } from './r1-format.js';
import { instructionReward, r1FormatReward } from './reward.js';

describe('checkR1Format', () => {
  it('should accept the strict format', () => {
    const result = checkR1Format('<think>\n2+2=4\n</think>\n<answer>4</answer>\n');
    expect(result).toMatchObject({ score: 1, correct: true, answer: '4', violations: [] });
    expect(result.think).toBe('\n2+2=4\n');
  });

  it('should reject each way of breaking it', () => {
    const cases: [string, string][] = [
      ['4', 'missing-think'],
      ['<think>x</think>', 'missing-answer'],
      ['<answer>4</answer><think>x</think>', 'wrong-order'],
      ['hello <think>x</think><answer>4</answer>', 'text-outside-tags'],
      ['<think>x</think> so <answer>4</answer>', 'text-outside-tags'],
      ['<think>x</think><answer>4</answer> trailing', 'text-outside-tags'],
      ['<think>x</think><answer>4</answer><answer>5</answer>', 'duplicate-tag'],
      ['<think><think>x</think><answer>4</answer>', 'duplicate-tag'],
      ['<think> </think><answer>4</answer>', 'empty-think'],
      ['<think>x</think><answer>  </answer>', 'empty-answer'],
      ['<THINK>x</THINK><ANSWER>4</ANSWER>', 'missing-think'],
    ];
    for (const [response, violation] of cases) {
      const result = checkR1Format(response);
      expect(result.score, response).toBe(0);
      expect(result.violations, response).toContain(violation);
    }
  });

  it('should support templates that open <think> in the prompt', () => {
    expect(checkR1Format('x</think><answer>4</answer>', { requireThinkOpen: false }).score).toBe(1);
    expect(checkR1Format('x</think><answer>4</answer>').score).toBe(0);
  });
});

describe('checkInstructions', () => {
  const check = (response: string, constraint: InstructionConstraint) =>
    checkInstructions(response, [constraint]).results[0]!;

  it('should count words, sentences and paragraphs as documented', () => {
    expect(countWords("It's a well-known fact: 3.14 is π-ish.")).toBe(7);
    expect(countSentences('Pi is 3.14. Really! Is it? yes')).toBe(4);
    expect(countSentences('e.g.x is one sentence')).toBe(1);
    expect(check('a b c', { type: 'word-count', min: 3, max: 3 }).passed).toBe(true);
    expect(check('a b c d', { type: 'word-count', max: 3 }).passed).toBe(false);
    expect(
      check('One.\n\nTwo.\n \nThree.', { type: 'paragraph-count', min: 3, max: 3 }).passed,
    ).toBe(true);
    expect(
      check('One.\n***\nTwo.', { type: 'paragraph-count', separator: 'divider', min: 2, max: 2 })
        .passed,
    ).toBe(true);
  });

  it('should check case, commas, keywords and phrases', () => {
    expect(check('all lower case here', { type: 'lowercase' }).passed).toBe(true);
    expect(check('Not lower', { type: 'lowercase' }).passed).toBe(false);
    expect(check('123', { type: 'lowercase' }).passed).toBe(false);
    expect(check('LOUD TEXT 1', { type: 'uppercase' }).passed).toBe(true);
    expect(check('no commas here', { type: 'no-commas' }).passed).toBe(true);
    expect(check('a, b', { type: 'no-commas' }).passed).toBe(false);
    expect(
      check('The Cat sat', { type: 'keywords', include: ['cat'], exclude: ['dog'] }).passed,
    ).toBe(true);
    expect(check('concatenate', { type: 'keywords', include: ['cat'] }).passed).toBe(false);
    expect(check('a dog', { type: 'keywords', exclude: ['dog'] }).passed).toBe(false);
    expect(check('cat Cat CAT', { type: 'keyword-frequency', keyword: 'cat', min: 3 }).passed).toBe(
      true,
    );
    expect(
      check('cat Cat CAT', {
        type: 'keyword-frequency',
        keyword: 'cat',
        caseSensitive: true,
        min: 2,
      }).passed,
    ).toBe(false);
    expect(check('  Hello world', { type: 'starts-with', text: 'Hello' }).passed).toBe(true);
    expect(
      check('Is there anything else I can help with?\n', {
        type: 'ends-with',
        text: 'Is there anything else I can help with?',
      }).passed,
    ).toBe(true);
    expect(check('"quoted"', { type: 'quotation' }).passed).toBe(true);
    expect(check('"', { type: 'quotation' }).passed).toBe(false);
  });

  it('should check JSON with fence modes', () => {
    expect(check('{"a": 1}', { type: 'json' }).passed).toBe(true);
    expect(check('```json\n{"a": 1}\n```', { type: 'json' }).passed).toBe(true);
    expect(check('```json\n{"a": 1}\n```', { type: 'json', fence: 'forbid' }).passed).toBe(false);
    expect(check('{"a": 1}', { type: 'json', fence: 'require' }).passed).toBe(false);
    expect(check('Here: {"a": 1}', { type: 'json' }).passed).toBe(false);
  });

  it('should check structure: bullets, title, placeholders, sections', () => {
    expect(
      check('* one\n- two\n+ three\n*not a bullet*', { type: 'bullet-count', min: 3, max: 3 })
        .passed,
    ).toBe(true);
    expect(check('<<My Title>>\ntext', { type: 'title' }).passed).toBe(true);
    expect(check('<< >>', { type: 'title' }).passed).toBe(false);
    expect(check('Dear [name], at [address]', { type: 'placeholders', min: 2 }).passed).toBe(true);
    expect(check('Dear [ ]', { type: 'placeholders' }).passed).toBe(false);
    expect(check('Section 1\na\nSection 2\nb', { type: 'sections', count: 2 }).passed).toBe(true);
    expect(check('Section 1\na\nSECTION 2\nb', { type: 'sections', count: 2 }).passed).toBe(false);
    expect(check('Section 1\nSection 3', { type: 'sections', count: 2 }).passed).toBe(false);
    expect(check('## Part 1\nPart 2', { type: 'sections', count: 2, marker: 'Part' }).passed).toBe(
      true,
    );
  });

  it('should give partial credit as the fraction of constraints met', () => {
    const result = checkInstructions('all lower, with comma', [
      { type: 'lowercase' },
      { type: 'no-commas' },
      { type: 'word-count', max: 10 },
      { type: 'title' },
    ]);
    expect(result.score).toBe(0.5);
    expect(result.correct).toBe(false);
    expect(result.violations).toEqual(['no-commas', 'title']);
  });

  it('should validate constraints with errors naming the field', () => {
    expect(() => checkInstructions('x', [])).toThrow(/'constraints'/);
    expect(() => checkInstructions('x', [{ type: 'nope' } as never])).toThrow(
      /'constraints\[0\]\.type'/,
    );
    expect(() => checkInstructions('x', [{ type: 'word-count', min: 5, max: 2 }])).toThrow(
      /'constraints\[0\]\.max'/,
    );
    expect(() => checkInstructions('x', [{ type: 'sections', count: 0 }])).toThrow(
      /'constraints\[0\]\.count'/,
    );
  });
});

describe('format adversarial probes', () => {
  it('should not be fooled by tags quoted inside the answer or nested think blocks', () => {
    expect(
      checkR1Format('<think>a</think><answer>x</answer>\n<think>b</think><answer>y</answer>').score,
    ).toBe(0);
    expect(checkR1Format('<think>a <answer>fake</answer></think><answer>4</answer>').score).toBe(0);
  });

  it('should not count fake bullets, fake titles or padding as meeting constraints', () => {
    expect(
      checkInstructions('*bold*\n**also bold**', [{ type: 'bullet-count', min: 1 }]).score,
    ).toBe(0);
    expect(checkInstructions('<<\n>>', [{ type: 'title' }]).score).toBe(0);
    expect(
      checkInstructions(`${'word '.repeat(500)}`, [{ type: 'word-count', max: 100 }]).score,
    ).toBe(0);
  });
});

describe('format fuzzing (never throws, bounded time)', () => {
  const everything: InstructionConstraint[] = [
    { type: 'r1-format' },
    { type: 'word-count', min: 1 },
    { type: 'sentence-count', max: 50 },
    { type: 'paragraph-count', min: 1 },
    { type: 'paragraph-count', separator: 'divider', min: 1 },
    { type: 'no-commas' },
    { type: 'lowercase' },
    { type: 'uppercase' },
    { type: 'keywords', include: ['a.b'], exclude: ['(x)'] },
    { type: 'keyword-frequency', keyword: '[', max: 2 },
    { type: 'json' },
    { type: 'starts-with', text: '<' },
    { type: 'ends-with', text: '>' },
    { type: 'bullet-count', min: 1 },
    { type: 'title' },
    { type: 'placeholders' },
    { type: 'sections', count: 2 },
    { type: 'quotation' },
    { type: 'repeat-prompt', prompt: 'Write [a] (poem)' },
    { type: 'two-responses' },
  ];

  it('should return a score in [0, 1] for random strings', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (response) => {
        const result = checkInstructions(response, everything);
        expect(result.score).toBeGreaterThanOrEqual(0);
        expect(result.score).toBeLessThanOrEqual(1);
      }),
      { seed: 5, numRuns: 300 },
    );
  });

  it('should handle 1 MB hostile inputs quickly (no ReDoS)', () => {
    const megabyte = 1 << 20;
    for (const input of [
      'a'.repeat(megabyte),
      '<<'.repeat(megabyte / 2),
      '['.repeat(megabyte),
      '\n'.repeat(megabyte),
      ' \n'.repeat(megabyte / 2),
      '.'.repeat(megabyte),
      '```'.repeat(megabyte / 3),
      '*'.repeat(megabyte),
      '<think>'.repeat(megabyte / 7),
      'Section 1\n'.repeat(megabyte / 10),
      '{"a":'.repeat(megabyte / 5),
      `${'a'.repeat(megabyte)}!`,
      `x${' '.repeat(megabyte)}x`,
      `<<${'a'.repeat(megabyte)}`,
      `[${'a '.repeat(megabyte / 2)}`,
      `${' \t'.repeat(megabyte / 2)}***`,
      `"${'x'.repeat(megabyte)}`,
      '******'.repeat(megabyte / 6),
      '[x](y)'.repeat(megabyte / 6),
      '- [x]\n'.repeat(megabyte / 6),
    ]) {
      const start = performance.now();
      const result = checkInstructions(input, everything);
      expect(result.score).toBeGreaterThanOrEqual(0);
      expect(performance.now() - start).toBeLessThan(3000); // generous; typically tens of ms
    }
  });
});

describe('format rewards', () => {
  it('should adapt the checks to reward functions', async () => {
    expect(
      await r1FormatReward()({ prompt: 'p', completion: '<think>x</think><answer>4</answer>' }),
    ).toBe(1);
    const fixed = instructionReward({
      constraints: [{ type: 'no-commas' }, { type: 'lowercase' }],
    });
    expect(await fixed({ prompt: 'p', completion: 'all lower, case' })).toBe(0.5);
    const fromSample = instructionReward();
    expect(
      await fromSample({
        prompt: 'p',
        completion: 'x',
        metadata: { constraints: [{ type: 'title' }] },
      }),
    ).toBe(0);
    expect(await fromSample({ prompt: 'p', completion: 'x' })).toBeNull();
  });
});
