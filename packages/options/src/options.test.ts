import {
  assertSampler,
  ErrorCode,
  type InvalidArgumentError,
  RlvrError,
  validateInteger,
  validateNumber,
  validateOneOf,
  validateOptions,
} from '@rlvr/core';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { defineOptions } from './define.js';
import {
  asserted,
  boolean,
  expecting,
  func,
  integer,
  number,
  object,
  oneOf,
  optional,
  text,
  withDefault,
} from './fields.js';
import { toJsonSchema } from './json-schema.js';
import { fillOptionsTables, optionsTable, syncOptionsTables } from './tables.js';

const thrown = (run: () => unknown): InvalidArgumentError => {
  try {
    run();
  } catch (error) {
    // UnsupportedSpecificationError (assertSampler) is an RlvrError with a parameter too.
    if (RlvrError.isInstance(error)) return error as InvalidArgumentError;
    throw error;
  }
  throw new Error('expected a throw');
};

const FN = 'example';
const EXAMPLE = defineOptions(
  {
    groupSize: withDefault(integer({ min: 2 }), 8, 'Responses per prompt.'),
    beta: optional(number({ min: 0, max: 1, exclusiveMin: true }), 'KL coefficient.'),
    prefer: withDefault(oneOf(['shorter', 'first']), 'shorter', 'Which traces first.'),
    pack: withDefault(boolean(), false, 'Pack rows.'),
    outPath: optional(text('a file path'), { description: 'Where.', defaultText: 'no file' }),
    reward: optional(func<() => number>('a reward function'), 'Scores a trace.'),
    sampling: object({
      maxNewTokens: integer({ min: 1 }),
      temperature: withDefault(number({ min: 0, exclusiveMin: true }), 1, 'Softmax temperature.'),
    }),
    checkpoint: optional(
      object({ dir: text('a folder path'), every: withDefault(integer({ min: 1 }), 10, 'Steps.') }),
      'Save checkpoints.',
    ),
  },
  { parameter: 'options', functionName: FN },
);
const valid = { sampling: { maxNewTokens: 4 } };

describe('defineOptions', () => {
  it('lists the keys in declaration order and collects the defaults, nested ones too', () => {
    expect(EXAMPLE.keys).toEqual([
      'groupSize',
      'beta',
      'prefer',
      'pack',
      'outPath',
      'reward',
      'sampling',
      'checkpoint',
    ]);
    expect(EXAMPLE.defaults).toEqual({
      groupSize: 8,
      prefer: 'shorter',
      pack: false,
      sampling: { temperature: 1 },
      checkpoint: { every: 10 },
    });
    expect(Object.isFrozen(EXAMPLE.defaults)).toBe(true);
  });

  it('returns the options with the defaults filled in and functions passed by reference', () => {
    const reward = () => 1;
    const parsed = EXAMPLE.parse({ ...valid, reward, checkpoint: { dir: 'out' } });
    expect(parsed).toEqual({
      groupSize: 8,
      prefer: 'shorter',
      pack: false,
      reward,
      sampling: { maxNewTokens: 4, temperature: 1 },
      checkpoint: { dir: 'out', every: 10 },
    });
    expect(parsed.reward).toBe(reward);
  });

  it("writes core's validators' messages for every kind of field (same text, same parameter)", () => {
    const cases: [Record<string, unknown>, () => unknown][] = [
      [
        { groupSize: 1 },
        () => validateInteger(1, { parameter: 'options.groupSize', functionName: FN, min: 2 }),
      ],
      [
        { groupSize: 2.5 },
        () => validateInteger(2.5, { parameter: 'options.groupSize', functionName: FN, min: 2 }),
      ],
      [
        { groupSize: '8' },
        () => validateInteger('8', { parameter: 'options.groupSize', functionName: FN, min: 2 }),
      ],
      [
        { beta: 0 },
        () =>
          validateNumber(0, {
            parameter: 'options.beta',
            functionName: FN,
            min: 0,
            max: 1,
            exclusiveMin: true,
          }),
      ],
      [
        { beta: Number.NaN },
        () =>
          validateNumber(Number.NaN, {
            parameter: 'options.beta',
            functionName: FN,
            min: 0,
            max: 1,
            exclusiveMin: true,
          }),
      ],
      [
        { beta: Number.POSITIVE_INFINITY },
        () =>
          validateNumber(Infinity, {
            parameter: 'options.beta',
            functionName: FN,
            min: 0,
            max: 1,
            exclusiveMin: true,
          }),
      ],
      [
        { prefer: 'longer' },
        () =>
          validateOneOf('longer', ['shorter', 'first'], {
            parameter: 'options.prefer',
            functionName: FN,
          }),
      ],
      [
        { sampling: { maxNewTokens: 0 } },
        () =>
          validateInteger(0, {
            parameter: 'options.sampling.maxNewTokens',
            functionName: FN,
            min: 1,
          }),
      ],
      [
        { sampling: {} },
        () =>
          validateInteger(undefined, {
            parameter: 'options.sampling.maxNewTokens',
            functionName: FN,
            min: 1,
          }),
      ],
      [
        { sampling: 3 },
        () => validateOptions(3, { parameter: 'options.sampling', functionName: FN }),
      ],
      // a required options object left out reads as {}, as validateOptions(undefined) does
      [
        { sampling: undefined },
        () =>
          validateInteger(undefined, {
            parameter: 'options.sampling.maxNewTokens',
            functionName: FN,
            min: 1,
          }),
      ],
    ];
    for (const [options, oracle] of cases) {
      const actual = thrown(() => EXAMPLE.parse({ ...valid, ...options }));
      const expected = thrown(oracle);
      expect(actual.message).toBe(expected.message);
      expect(actual.code).toBe(ErrorCode.INVALID_ARGUMENT);
      expect(actual.parameter).toBe(expected.parameter);
    }
    expect(thrown(() => EXAMPLE.parse({ ...valid, pack: 'yes' })).message).toBe(
      `Invalid argument for parameter 'options.pack' of ${FN}(): expected a boolean, got "yes"`,
    );
    expect(thrown(() => EXAMPLE.parse({ ...valid, reward: 3 })).message).toContain(
      'expected a reward function, got 3',
    );
    expect(thrown(() => EXAMPLE.parse({ ...valid, outPath: '' })).message).toContain(
      'expected a file path, got ""',
    );
  });

  it("refuses unknown keys as core's validateOptions does: closest key, nested path", () => {
    const known = [...EXAMPLE.keys];
    for (const [options, oracle] of [
      [
        { group_size: 4 },
        () => validateOptions({ group_size: 4 }, { parameter: 'options', functionName: FN, known }),
      ],
      [
        { kl_coef: 0.1 },
        () => validateOptions({ kl_coef: 0.1 }, { parameter: 'options', functionName: FN, known }),
      ],
      [
        { zzz: 1 },
        () => validateOptions({ zzz: 1 }, { parameter: 'options', functionName: FN, known }),
      ],
      [
        { sampling: { maxNewTokens: 4, temprature: 1 } },
        () =>
          validateOptions(
            { maxNewTokens: 4, temprature: 1 },
            {
              parameter: 'options.sampling',
              functionName: FN,
              known: ['maxNewTokens', 'temperature'],
            },
          ),
      ],
    ] as const) {
      const actual = thrown(() => EXAMPLE.parse({ ...valid, ...options }));
      const expected = thrown(oracle);
      expect(actual.code).toBe(ErrorCode.UNKNOWN_OPTION);
      expect(actual.message).toBe(expected.message);
    }
    expect(thrown(() => EXAMPLE.parse({ ...valid, group_size: 4 })).message).toContain(
      "did you mean 'groupSize'?",
    );
  });

  it("gives a nested object's own aliases to the hint, as validateOptions with aliases does", () => {
    const aliases = { lr: 'learningRate', kind: 'schedule' };
    const nested = object(
      {
        learningRate: number({ min: 0 }),
        schedule: optional(oneOf(['constant', 'cosine']), 'Shape.'),
      },
      { aliases },
    );
    const defined = defineOptions(
      {
        schedule: optional(nested, 'The schedule.'),
        sampling: optional(z.union([boolean(), nested]), 'A boolean or a schedule.'),
      },
      { parameter: 'config', functionName: FN, aliases: { learning_rate: 'schedule' } },
    );
    const known = ['learningRate', 'schedule'];
    for (const [options, parameter, value] of [
      [{ schedule: { lr: 1 } }, 'config.schedule', { lr: 1 }],
      [
        { schedule: { learningRate: 1, kind: 'cosine' } },
        'config.schedule',
        { learningRate: 1, kind: 'cosine' },
      ],
      [{ sampling: { lr: 1 } }, 'config.sampling', { lr: 1 }],
      [
        { sampling: { learningRate: 1, kind: 'x' } },
        'config.sampling',
        { learningRate: 1, kind: 'x' },
      ],
    ] as const) {
      const expected = thrown(() =>
        validateOptions(value, { parameter, functionName: FN, known, aliases }),
      );
      const actual = thrown(() => defined.parse(options));
      expect(actual.code).toBe(ErrorCode.UNKNOWN_OPTION);
      expect(actual.message).toBe(expected.message);
    }
    // the top level keeps the context's aliases
    expect(thrown(() => defined.parse({ learning_rate: 1 })).message).toContain(
      "did you mean 'schedule'?",
    );
  });

  it('reports an object’s unknown keys before the errors inside it, then fields in order', () => {
    // Both a bad field and an unknown key: the unknown key first, as validateOptions checked it.
    expect(
      thrown(() => EXAMPLE.parse({ groupSize: 1, sampling: { maxNewTokens: 4 }, extra: 1 })).code,
    ).toBe(ErrorCode.UNKNOWN_OPTION);
    expect(
      thrown(() => EXAMPLE.parse({ groupSize: 1, sampling: { maxNewTokens: 0, extra: 1 } }))
        .parameter,
    ).toBe('options.groupSize');
    expect(thrown(() => EXAMPLE.parse({ sampling: { maxNewTokens: 0, extra: 1 } })).parameter).toBe(
      'options.sampling.extra',
    );
    expect(
      thrown(() => EXAMPLE.parse({ groupSize: 1, beta: 2, sampling: { maxNewTokens: 4 } }))
        .parameter,
    ).toBe('options.groupSize');
  });

  it('takes undefined as no options and refuses a non-object as validateOptions does', () => {
    const seedOnly = defineOptions(
      { seed: optional(integer(), 'Seed.') },
      { parameter: 'options', functionName: FN },
    );
    expect(seedOnly.parse(undefined)).toEqual({});
    for (const bad of [null, 3, [1], 'x']) {
      expect(thrown(() => seedOnly.parse(bad)).message).toBe(
        thrown(() => validateOptions(bad, { parameter: 'options', functionName: FN })).message,
      );
    }
  });
});

describe('asserted', () => {
  it("reports the validator's own error, in the field's place in the declaration order", () => {
    const WITH_SAMPLER = defineOptions(
      {
        sampler: asserted((value, parameter) => assertSampler(value, parameter), 'a Sampler'),
        k: integer({ min: 1 }),
      },
      { parameter: 'options', functionName: FN },
    );
    const sampler = { specificationVersion: 'v1', sample: async () => [] };
    expect(WITH_SAMPLER.parse({ sampler, k: 1 }).sampler).toBe(sampler);
    for (const bad of [undefined, {}, { ...sampler, specificationVersion: 'v0' }]) {
      const actual = thrown(() => WITH_SAMPLER.parse({ sampler: bad, k: 0 }));
      expect(actual.message).toBe(thrown(() => assertSampler(bad, 'options.sampler')).message);
    }
    expect(thrown(() => WITH_SAMPLER.parse({ sampler, k: 0 })).parameter).toBe('options.k');
  });
});

describe('unions', () => {
  const RESUME = defineOptions(
    {
      resumeFrom: optional(
        expecting(
          z.union([text('a folder or a position'), object({ epoch: integer({ min: 0 }) })]),
          'a folder or a position',
        ),
        'Where to resume.',
      ),
    },
    { parameter: 'options', functionName: FN },
  );

  it('reports the error of the branch the value was meant for', () => {
    expect(RESUME.parse({ resumeFrom: 'dir' }).resumeFrom).toBe('dir');
    expect(RESUME.parse({ resumeFrom: { epoch: 2 } }).resumeFrom).toEqual({ epoch: 2 });
    const where = (resumeFrom: unknown) => {
      const error = thrown(() => RESUME.parse({ resumeFrom }));
      return [error.code, error.parameter, error.message.split(': ')[1]];
    };
    expect(where('')).toEqual([
      'INVALID_ARGUMENT',
      'options.resumeFrom',
      'expected a folder or a position, got ""',
    ]);
    expect(where(3)).toEqual([
      'INVALID_ARGUMENT',
      'options.resumeFrom',
      'expected a folder or a position, got 3',
    ]);
    expect(where({ epoch: -1 })).toEqual([
      'INVALID_ARGUMENT',
      'options.resumeFrom.epoch',
      'expected an integer >= 0, got -1',
    ]);
    expect(where({ x: 1 })[0]).toBe('UNKNOWN_OPTION');
    expect(where({ epoch: 0, x: 1 })[0]).toBe('UNKNOWN_OPTION');
    expect(where({ epoch: 0, x: 1 })[1]).toBe('options.resumeFrom.x');
  });
});

describe('discriminated unions', () => {
  const STOP = defineOptions(
    {
      strategy: expecting(
        z.discriminatedUnion('type', [
          object({ type: z.literal('esc'), windowSize: integer({ min: 1 }) }),
          object({
            type: z.literal('adaptive'),
            threshold: withDefault(number({ min: 0, max: 1 }), 0.95, 'Confidence to stop at.'),
          }),
        ]),
        'an options object',
      ),
    },
    { parameter: 'options', functionName: FN },
  );

  it("names the tag's values, and the branch's own keys and fields", () => {
    expect(STOP.parse({ strategy: { type: 'adaptive' } }).strategy).toEqual({
      type: 'adaptive',
      threshold: 0.95,
    });
    const where = (strategy: unknown) => {
      const error = thrown(() => STOP.parse({ strategy }));
      return [error.code, error.parameter, error.message.split(': ')[1]];
    };
    expect(where({ type: 'x' })).toEqual([
      'INVALID_ARGUMENT',
      'options.strategy.type',
      "expected one of 'esc', 'adaptive', got \"x\"",
    ]);
    expect(where(undefined)).toEqual([
      'INVALID_ARGUMENT',
      'options.strategy.type',
      "expected one of 'esc', 'adaptive', got undefined",
    ]);
    expect(where({ type: 'esc' })[1]).toBe('options.strategy.windowSize');
    expect(where({ type: 'adaptive', threshold: 2 })[2]).toBe(
      'expected a finite number in [0, 1], got 2',
    );
    const unknown = thrown(() => STOP.parse({ strategy: { type: 'adaptive', windowSize: 2 } }));
    expect(unknown.code).toBe('UNKNOWN_OPTION');
    expect(unknown.message).toContain("one of 'type', 'threshold'");
  });

  it('lists the tag and each branch’s fields, marked with their tag, in the README table', () => {
    const table = optionsTable(STOP.schema);
    expect(table).toContain("| `strategy.type` | one of 'esc', 'adaptive' | required |");
    expect(table).toContain(
      "| `strategy.threshold` | a finite number in [0, 1] | `0.95` | With `type: 'adaptive'`: Confidence to stop at. |",
    );
    expect(table).toContain(
      "| `strategy.windowSize` | an integer >= 1 | required | With `type: 'esc'`:",
    );
  });
});

describe('toJsonSchema', () => {
  const ajv = new Ajv2020({ strict: true });
  const schema = toJsonSchema(z.omit(EXAMPLE.schema, { reward: true }), { title: 'example' });
  const check = ajv.compile(schema);

  it('accepts what parse accepts and refuses unknown keys, bad types and ranges', () => {
    expect(check(valid)).toBe(true);
    expect(check({ ...valid, beta: 0.5, prefer: 'first', checkpoint: { dir: 'out' } })).toBe(true);
    expect(check({ ...valid, extra: 1 })).toBe(false);
    expect(check({ ...valid, beta: 0 })).toBe(false);
    expect(check({ ...valid, groupSize: 2.5 })).toBe(false);
    expect(check({ ...valid, prefer: 'longer' })).toBe(false);
    expect(check({})).toBe(false);
  });

  it('carries the descriptions and defaults', () => {
    const properties = schema.properties as Record<string, Record<string, unknown>>;
    expect(properties.groupSize).toMatchObject({
      description: 'Responses per prompt.',
      default: 8,
      minimum: 2,
    });
    expect(schema.title).toBe('example');
  });
});

describe('options tables', () => {
  it('writes one row per option, nested ones dotted, with the default or its text', () => {
    const table = optionsTable(EXAMPLE.schema);
    expect(table).toContain('| `groupSize` | an integer >= 2 | `8` | Responses per prompt. |');
    expect(table).toContain('| `outPath` | a file path | no file | Where. |');
    expect(table).toContain('| `beta` | a finite number in (0, 1] | — | KL coefficient. |');
    expect(table).toContain('| `sampling.maxNewTokens` | an integer >= 1 | required |  |');
    expect(table).toContain('| `checkpoint.every` | an integer >= 1 | `10` | Steps. |');
  });

  it('finds a stale table and replaces only the marked block', () => {
    const readme =
      'intro\n<!-- options-table:example -->\nold\n<!-- /options-table:example -->\nrest\n';
    const synced = syncOptionsTables(readme, { example: EXAMPLE.schema });
    expect(synced.stale).toEqual(['example']);
    expect(synced.markdown.startsWith('intro\n<!-- options-table:example -->\n| option |')).toBe(
      true,
    );
    expect(synced.markdown.endsWith('\n<!-- /options-table:example -->\nrest\n')).toBe(true);
    expect(syncOptionsTables(synced.markdown, { example: EXAMPLE.schema }).stale).toEqual([]);
    expect(() => fillOptionsTables('no markers', { example: 'x' })).toThrow(
      /options-table:example/,
    );
  });
});
