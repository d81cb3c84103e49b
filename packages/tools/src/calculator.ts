import type { ToolDefinition } from '@rlvr/core';
import { all, create } from 'mathjs';

const math = create(all!, { number: 'number' });
// mathjs' own advice for untrusted expressions: no access to the parser, imports or units.
const evaluate = math.evaluate.bind(math);
const disabled = () => {
  throw new Error('function disabled in the calculator');
};
math.import(
  {
    import: disabled,
    createUnit: disabled,
    evaluate: disabled,
    parse: disabled,
    simplify: disabled,
    derivative: disabled,
    resolve: disabled,
    reviver: disabled,
  },
  { override: true },
);

/** Input of the calculator tool. */
export type CalculatorInput = { expression: string };

/**
 * A calculator tool (mathjs' expression language on float64 numbers: `+ - * / ^ %`, parentheses,
 * `sqrt`, `log`, …; imports, units and the parser itself are disabled). Its result is the number
 * as text (up to 15 significant digits); a bad expression is a tool error the model sees.
 *
 * @example
 * ```ts
 * const calculator = createCalculatorTool();
 * await calculator.execute({ expression: '1234 * 5678' }, context); // '7006652'
 * ```
 */
export function createCalculatorTool(): ToolDefinition<CalculatorInput> {
  return {
    name: 'calculator',
    description: 'Evaluates an arithmetic expression and returns the number.',
    inputSchema: {
      type: 'object',
      properties: { expression: { type: 'string', maxLength: 500 } },
      required: ['expression'],
      additionalProperties: false,
    },
    timeoutMs: 1000,
    execute({ expression }) {
      const value: unknown = evaluate(expression);
      if (typeof value !== 'number') throw new Error('the expression is not a number');
      return math.format(value, { precision: 15, lowerExp: -9, upperExp: 21 });
    },
  };
}
