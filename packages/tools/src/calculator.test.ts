import { describe, expect, it } from 'vitest';
import { createCalculatorTool } from './calculator.js';

const context = { signal: new AbortController().signal, trajectoryId: 't' };

describe('createCalculatorTool', () => {
  it('multiplies 4-digit numbers exactly and evaluates expressions', async () => {
    const calculator = createCalculatorTool();
    expect(await calculator.execute({ expression: '1234 * 5678' }, context)).toBe('7006652');
    expect(await calculator.execute({ expression: '9999*9999' }, context)).toBe('99980001');
    expect(await calculator.execute({ expression: '(2 + 3) ^ 2 / 4' }, context)).toBe('6.25');
  });

  it('refuses the parser, imports and non-numbers', () => {
    const calculator = createCalculatorTool();
    for (const expression of [
      'evaluate("1")',
      'import({}, {})',
      'parse("1")',
      '"text"',
      'createUnit("x")',
    ]) {
      expect(() => calculator.execute({ expression }, context), expression).toThrow();
    }
  });
});
