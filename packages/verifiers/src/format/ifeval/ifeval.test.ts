import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkIfeval, checkIfevalAsync, looseVariants } from './evaluate.js';
import {
  evaluateIfeval,
  parseIfevalInput,
  parseIfevalResponses,
  scoreIfevalFiles,
} from './report.js';
import { ifevalReward } from './reward.js';
import { countSentences, countWordTokens, isLower, isUpper, wordTokens } from './text.js';

/** Rows as IFEval's Hugging Face copy has them: every kwarg key present, null when unused. */
const NULLS = { num_words: null, relation: null, num_highlights: null, prompt_to_repeat: null };
const INPUT = [
  {
    key: 1000,
    prompt: 'Write about rain. Do not use any commas and highlight at least 1 section.',
    instruction_id_list: ['punctuation:no_comma', 'detectable_format:number_highlighted_sections'],
    kwargs: [{ ...NULLS }, { ...NULLS, num_highlights: 1 }],
  },
  {
    key: 1012,
    prompt: 'Write an email.\nFirst repeat the request word for word without change',
    instruction_id_list: ['combination:repeat_prompt', 'length_constraints:number_words'],
    kwargs: [
      { ...NULLS, prompt_to_repeat: 'Write an email.' },
      { ...NULLS, relation: 'at least', num_words: 6 },
    ],
  },
  {
    key: 1019,
    prompt: 'Wrap it in quotes.',
    instruction_id_list: ['startend:quotation'],
    kwargs: [{}],
  },
];
const RESPONSES = [
  { prompt: INPUT[0]!.prompt, response: 'Rain falls *softly* on the roof' },
  { prompt: INPUT[1]!.prompt, response: 'Sure:\nWrite an email.\nDear boss I quit today.' },
  { prompt: INPUT[2]!.prompt, response: '""' },
];
const jsonl = (rows: object[]) => `${rows.map((row) => JSON.stringify(row)).join('\n')}\n`;

describe('IFEval adapter and accuracies', () => {
  it('should read IFEval rows as they are (null kwargs) and give the four accuracies', async () => {
    const rows = parseIfevalInput(jsonl(INPUT));
    const report = await evaluateIfeval(rows, parseIfevalResponses(jsonl(RESPONSES)));
    // Row 1: both strict. Row 2: repeat_prompt fails strict, passes loose (first line dropped);
    // words "Sure Write an email Dear boss I quit today" = 9 >= 6. Row 3: "" is no quotation.
    expect(report.prompts).toBe(3);
    expect(report.instructions).toBe(5);
    expect(report.strict).toEqual({ prompt: 1 / 3, instruction: 3 / 5 });
    expect(report.loose).toEqual({ prompt: 2 / 3, instruction: 4 / 5 });
    expect(report.byInstruction['combination:repeat_prompt']).toEqual({
      total: 1,
      strict: 0,
      loose: 1,
    });
    expect(report.byCategory.startend).toEqual({ total: 1, strict: 0, loose: 0 });
    const official = await evaluateIfeval(rows, RESPONSES, { semantics: 'official' });
    expect(official.strict.prompt).toBe(2 / 3); // IFEval itself accepts "" as a quotation
  });

  it('should score files and refuse a row without a response before scoring', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'ifeval-'));
    writeFileSync(join(folder, 'input.jsonl'), jsonl(INPUT));
    writeFileSync(join(folder, 'responses.jsonl'), jsonl(RESPONSES));
    const report = await scoreIfevalFiles({
      input: join(folder, 'input.jsonl'),
      responses: join(folder, 'responses.jsonl'),
    });
    expect(report.strict.instruction).toBe(3 / 5);
    writeFileSync(join(folder, 'partial.jsonl'), jsonl(RESPONSES.slice(0, 2)));
    await expect(
      scoreIfevalFiles({
        input: join(folder, 'input.jsonl'),
        responses: join(folder, 'partial.jsonl'),
      }),
    ).rejects.toThrow(/rows\[2\]/);
    await expect(
      scoreIfevalFiles({ input: 'a', responses: 'b', semantic: 'official' } as never),
    ).rejects.toThrow(/did you mean 'semantics'/);
  });

  it('should reject unknown ids and kwargs with did-you-mean, and missing kwargs', () => {
    expect(() => checkIfeval('x', [{ id: 'detectable_format:titel' as never }])).toThrow(
      /did you mean 'detectable_format:title'/,
    );
    expect(() =>
      checkIfeval('x', [{ id: 'length_constraints:number_words', kwargs: { num_word: 3 } }]),
    ).toThrow(/did you mean 'num_words'/);
    expect(() =>
      checkIfeval('x', [{ id: 'length_constraints:number_words', kwargs: { num_words: 3 } }]),
    ).toThrow(/relation/);
    expect(() =>
      checkIfeval('x', [
        { id: 'length_constraints:number_words', kwargs: { num_words: 3, relation: 'at most' } },
      ]),
    ).toThrow(/'less than', 'at least'/);
    expect(() =>
      checkIfeval('x', [{ id: 'punctuation:no_comma' }], { semantic: 'x' } as never),
    ).toThrow(/did you mean 'semantics'/);
    expect(() =>
      checkIfeval('x', [{ id: 'language:response_language', kwargs: { language: 'en' } }]),
    ).toThrow(/options\.detector/);
    expect(() =>
      checkIfeval('x', [{ id: 'language:response_language', kwargs: { language: 'xx' } }]),
    ).toThrow(/ISO 639-1/);
  });

  it('should fail every instruction on an empty response, as IFEval does', () => {
    const result = checkIfeval('   ', [
      { id: 'punctuation:no_comma' },
      { id: 'length_constraints:number_words', kwargs: { num_words: 5, relation: 'less than' } },
    ]);
    expect(result.results.map((item) => [item.strict, item.loose])).toEqual([
      [false, false],
      [false, false],
    ]);
  });

  it('should make the 8 loose variants of IFEval', () => {
    expect(looseVariants('*a*\nb\n*c*')).toEqual([
      '*a*\nb\n*c*',
      'a\nb\nc',
      'b\n*c*',
      '*a*\nb',
      'b',
      'b\nc',
      'a\nb',
      'b',
    ]);
  });

  it('should load the detector itself in checkIfevalAsync and the reward', async () => {
    const spanish = 'El rápido zorro marrón salta sobre el perro perezoso en el jardín.';
    const result = await checkIfevalAsync(spanish, [
      { id: 'language:response_language', kwargs: { language: 'es' } },
    ]);
    expect(result.strict).toBe(true);
    const reward = ifevalReward();
    expect(
      await reward({
        prompt: 'p',
        completion: 'no commas here',
        metadata: {
          instruction_id_list: ['punctuation:no_comma', 'startend:quotation'],
          kwargs: [null, null],
        },
      }),
    ).toBe(0.5);
    expect(
      await ifevalReward({ level: 'prompt', loose: true })({
        prompt: 'p',
        completion: 'Intro:\n"quoted"',
        answer: [{ id: 'startend:quotation' }],
      }),
    ).toBe(1);
    expect(await reward({ prompt: 'p', completion: 'x' })).toBeNull();
    expect(() => ifevalReward({ levels: 'prompt' } as never)).toThrow(/did you mean 'level'/);
  });
});

describe('IFEval text primitives (Python / nltk equivalents)', () => {
  it('should count \\w+ tokens, punkt-like sentences and Treebank-like tokens', () => {
    expect(countWordTokens("It's 3.14 — naïve_x")).toBe(5); // It s 3 14 naïve_x
    // NLTK's Punkt: "e.g." is no abbreviation of its English model, "..." before a capital no end
    expect(countSentences('Hello world. How are you? Fine! e.g. this one.')).toBe(5);
    expect(countSentences('Steps:\n1. mix it\n2. bake it.')).toBe(1);
    expect(countSentences('Wait... What happened?')).toBe(1);
    expect(countSentences('')).toBe(0);
    expect(wordTokens("I DON'T know (NASA), IT'S U.S. well-known")).toEqual([
      'I',
      'DO',
      "N'T",
      'know',
      'NASA',
      'IT',
      "'S",
      'U.S',
      'well-known',
    ]);
  });

  it('should follow Python isupper/islower', () => {
    expect(isUpper('HELLO 123!')).toBe(true);
    expect(isUpper('123')).toBe(false);
    expect(isUpper('HELLO World')).toBe(false);
    expect(isLower('straße 1')).toBe(true);
    expect(isLower('ǅ')).toBe(false);
  });
});

describe('IFEval on hostile input (no super-linear regex)', () => {
  const all = [
    { id: 'keywords:existence', kwargs: { keywords: ['a.b'] } },
    { id: 'keywords:frequency', kwargs: { keyword: '[', frequency: 2, relation: 'less than' } },
    { id: 'keywords:forbidden_words', kwargs: { forbidden_words: ['x'] } },
    {
      id: 'keywords:letter_frequency',
      kwargs: { letter: 'a', let_frequency: 2, let_relation: 'at least' },
    },
    {
      id: 'length_constraints:number_sentences',
      kwargs: { num_sentences: 2, relation: 'at least' },
    },
    { id: 'length_constraints:number_paragraphs', kwargs: { num_paragraphs: 2 } },
    { id: 'length_constraints:number_words', kwargs: { num_words: 2, relation: 'at least' } },
    {
      id: 'length_constraints:nth_paragraph_first_word',
      kwargs: { num_paragraphs: 1, nth_paragraph: 1, first_word: 'a' },
    },
    { id: 'detectable_content:number_placeholders', kwargs: { num_placeholders: 1 } },
    { id: 'detectable_content:postscript', kwargs: { postscript_marker: 'P.S.' } },
    { id: 'detectable_format:number_bullet_lists', kwargs: { num_bullets: 1 } },
    { id: 'detectable_format:constrained_response' },
    { id: 'detectable_format:number_highlighted_sections', kwargs: { num_highlights: 1 } },
    {
      id: 'detectable_format:multiple_sections',
      kwargs: { section_spliter: 'Section', num_sections: 2 },
    },
    { id: 'detectable_format:json_format' },
    { id: 'detectable_format:title' },
    { id: 'combination:two_responses' },
    { id: 'combination:repeat_prompt', kwargs: { prompt_to_repeat: 'Write' } },
    { id: 'startend:end_checker', kwargs: { end_phrase: 'end' } },
    { id: 'startend:quotation' },
    {
      id: 'change_case:capital_word_frequency',
      kwargs: { capital_frequency: 1, capital_relation: 'at least' },
    },
    { id: 'punctuation:no_comma' },
  ] as const;

  it('should check 64 KB inputs of repeated markup in bounded time, both semantics', () => {
    const megabyte = 1 << 16; // quadratic behaviour would still take minutes at this size
    for (const input of [
      '\n'.repeat(megabyte),
      ' \n'.repeat(megabyte / 2),
      '<'.repeat(megabyte),
      `<<${'<'.repeat(megabyte)}`,
      '['.repeat(megabyte),
      '*'.repeat(megabyte),
      '* \n'.repeat(megabyte / 3),
      'Section '.repeat(megabyte / 8),
      '. '.repeat(megabyte / 2),
      'a'.repeat(megabyte),
      '"'.repeat(megabyte),
      'p. '.repeat(megabyte / 3),
    ]) {
      for (const semantics of ['hardened', 'official'] as const) {
        const start = performance.now();
        checkIfeval(input, [...all], { semantics });
        expect(performance.now() - start, JSON.stringify(input.slice(0, 8))).toBeLessThan(3000);
      }
    }
  });
});
