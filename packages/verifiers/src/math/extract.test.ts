import { describe, expect, it } from 'vitest';
import { extractAnswer } from './extract.js';

describe('extractAnswer', () => {
  it('should follow the documented priority order', () => {
    const all = 'The answer is 6.\nFinal answer: 5\n#### 4\n \\boxed{2}';
    expect(extractAnswer(all)).toMatchObject({ answer: '2', source: 'boxed' });
    // With an answer tag, only boxes inside it count.
    expect(extractAnswer(`${all}<answer>3</answer>`)).toMatchObject({
      answer: '3',
      source: 'answer-tag',
    });
    expect(
      extractAnswer('The answer is 6.\nFinal answer: 5\n#### 4\n<answer>3</answer>'),
    ).toMatchObject({
      answer: '3',
      source: 'answer-tag',
    });
    expect(extractAnswer('The answer is 6.\nFinal answer: 5\n#### 4')).toMatchObject({
      answer: '4',
      source: 'gsm8k',
    });
    expect(extractAnswer('The answer is 6.\nFinal answer: 5')).toMatchObject({
      answer: '5',
      source: 'final-answer',
    });
    expect(extractAnswer('The final answer is $6$. I hope it is correct.')).toMatchObject({
      answer: '6',
      source: 'minerva',
    });
    expect(extractAnswer('So the answer is 6.')).toMatchObject({
      answer: '6',
      source: 'answer-is',
    });
    expect(extractAnswer('we get 7 then 8')).toMatchObject({ answer: '8', source: 'last-number' });
    expect(extractAnswer('we get 7 then 8', { fallback: 'none' })).toMatchObject({
      answer: null,
      source: 'none',
    });
  });

  it('should read nested braces in the last box', () => {
    expect(
      extractAnswer('x \\boxed{1} y \\boxed{\\frac{\\sqrt{3}}{2}} z', { multipleAnswers: 'last' })
        .answer,
    ).toBe('\\frac{\\sqrt{3}}{2}');
    expect(extractAnswer('\\fbox{\\{1, 2\\}}').answer).toBe('\\{1, 2\\}');
  });

  it('should search boxes inside the answer tag only when there is one', () => {
    expect(extractAnswer('<think>\\boxed{1}</think><answer>\\boxed{2}</answer>').answer).toBe('2');
  });

  it('should mark hedges and list candidates', () => {
    expect(extractAnswer('\\boxed{1} or \\boxed{2}')).toEqual({
      answer: null,
      source: 'boxed',
      hedged: true,
      candidates: ['1', '2'],
    });
    expect(extractAnswer('The answer is 3 or 4.').hedged).toBe(true);
    expect(extractAnswer('maybe 3, or 4').hedged).toBe(true);
    expect(extractAnswer('\\boxed{2} and again \\boxed{\\frac{4}{2}}').hedged).toBe(false);
  });

  it('should strip math delimiters and trailing sentence text', () => {
    expect(extractAnswer('The answer is $\\frac{1}{2}$ since it halves.').answer).toBe(
      '\\frac{1}{2}',
    );
    expect(extractAnswer('The answer is 3.5. Next we check.').answer).toBe('3.5');
    expect(extractAnswer('The answer is \\(x^2\\)').answer).toBe('x^2');
  });

  it('should remove echoes of the question', () => {
    const question = 'What is the sum of 19 and 23? The answer is a number.';
    expect(extractAnswer(`${question}`, { question })).toMatchObject({ answer: null });
    expect(extractAnswer(`${question} It is 42.`, { question }).answer).toBe('42');
  });

  it('should reject empty and too-long answers', () => {
    expect(extractAnswer('\\boxed{}').answer).toBeNull();
    expect(extractAnswer(`\\boxed{${'1'.repeat(2000)}}`).answer).toBeNull();
    expect(extractAnswer(`\\boxed{${'1'.repeat(20)}}`, { maxAnswerLength: 10 }).answer).toBeNull();
  });

  it('should validate options', () => {
    expect(() => extractAnswer('x', { maxAnswerLength: 0 })).toThrow(/'options.maxAnswerLength'/);
    expect(() => extractAnswer('x', { multipleAnswers: 'first' as 'last' })).toThrow(
      /'options.multipleAnswers'/,
    );
    expect(() => extractAnswer(undefined as unknown as string)).toThrow(/'response'/);
  });
});
