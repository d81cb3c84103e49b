import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { closestOption, ErrorCode, type RewardFunction, type WeightedReward } from '@rlvr/core';
import { custom, defineOptions, number, optional, text, zod } from '@rlvr/options';
import {
  countdownReward,
  createCodeReward,
  ifevalReward,
  instructionReward,
  knightsKnavesReward,
  lengthPenaltyReward,
  mathReward,
  r1FormatReward,
  repetitionPenaltyReward,
} from '@rlvr/verifiers';
import { ConfigError } from '../errors/config-error.js';

type Factory = (options: Record<string, unknown> | undefined) => RewardFunction;

/** The rewards a config can name, each built from @rlvr/verifiers with the entry's `options`. */
export const REWARDS: Readonly<Record<string, { factory: Factory; about: string }>> = {
  math: {
    factory: (options) => mathReward(options as Parameters<typeof mathReward>[0]),
    about: 'final answer equivalent to the `answer` column (boxed / last number, LaTeX-aware)',
  },
  'r1-format': {
    factory: (options) => r1FormatReward(options as Parameters<typeof r1FormatReward>[0]),
    about: '1 when the completion is exactly <think>…</think><answer>…</answer>',
  },
  ifeval: {
    factory: (options) => ifevalReward(options as Parameters<typeof ifevalReward>[0]),
    about: 'IFEval instructions of the row (`instruction_id_list` + `kwargs` columns)',
  },
  instructions: {
    factory: (options) => instructionReward(options as Parameters<typeof instructionReward>[0]),
    about: 'instruction constraints in the `answer` or `constraints` column',
  },
  code: {
    factory: (options) =>
      createCodeReward({ language: 'python', ...options } as Parameters<
        typeof createCodeReward
      >[0]),
    about:
      'runs the code in a sandbox against the tests in `answer` (options.language, default python)',
  },
  countdown: {
    factory: (options) => countdownReward(options as Parameters<typeof countdownReward>[0]),
    about: 'Countdown: the expression reaches `target` with `numbers` (columns or answer)',
  },
  'knights-knaves': {
    factory: (options) => knightsKnavesReward(options as Parameters<typeof knightsKnavesReward>[0]),
    about: 'Knights and Knaves puzzles',
  },
  'length-penalty': {
    factory: (options) =>
      lengthPenaltyReward(options as unknown as Parameters<typeof lengthPenaltyReward>[0]),
    about: 'DAPO soft overlong penalty (options.maxLength, options.bufferLength)',
  },
  'repetition-penalty': {
    factory: (options) =>
      repetitionPenaltyReward(options as Parameters<typeof repetitionPenaltyReward>[0]),
    about: 'penalty for repeated n-grams',
  },
};

/**
 * One entry of the `rewards` list as an object, declared once: its keys (checked here, with the
 * CLI's messages), its JSON Schema and `--help`.
 */
export const REWARD_ENTRY_OPTIONS = defineOptions(
  {
    name: optional(text('a reward name'), {
      description: 'A built-in reward (see the list), or the name of a module reward.',
      defaultText: "a module reward: its export's name",
    }),
    weight: optional(number(), {
      description: 'Weight in the sum of rewards.',
      defaultText: '`1`',
    }),
    options: optional(
      custom<Record<string, unknown>>(() => true, "the reward's options"),
      "Options of a built-in reward (@rlvr/verifiers' factory of that name).",
    ),
    module: optional(text('a module path'), {
      description: 'A JavaScript module whose export is a core `RewardFunction`.',
      defaultText: 'a built-in reward',
    }),
    export: optional(text('an export name'), {
      description: "The module's export.",
      defaultText: '`default`',
    }),
  },
  { parameter: 'rewards[i]' },
);

const ENTRY_KEYS = REWARD_ENTRY_OPTIONS.keys;

/** What `rewards` takes: names (a list, or one comma-separated string) or entries. */
export const REWARDS_SCHEMA = zod.union([
  text('reward names, comma-separated'),
  zod.array(zod.union([text('a reward name'), REWARD_ENTRY_OPTIONS.schema])),
]);

function fail(
  key: string,
  source: string | undefined,
  message: string,
  code: ErrorCode = ErrorCode.INVALID_ARGUMENT,
) {
  return new ConfigError({ key, source, message, code });
}

async function loadModuleReward(
  entry: Record<string, unknown>,
  key: string,
  source: string | undefined,
): Promise<RewardFunction> {
  const path = entry.module as string;
  const exportName = (entry.export as string | undefined) ?? 'default';
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(resolve(path)).href)) as Record<string, unknown>;
  } catch (error) {
    throw new ConfigError({
      key: `${key}.module`,
      source,
      message: `cannot import '${path}': ${(error as Error).message}`,
      code: ErrorCode.INVALID_ARGUMENT,
      cause: error,
    });
  }
  const fn = module[exportName];
  if (typeof fn !== 'function') {
    const exported = Object.keys(module).filter((name) => typeof module[name] === 'function');
    throw fail(
      `${key}.export`,
      source,
      `'${path}' has no function export '${exportName}' (function exports: ${exported.join(', ') || 'none'})`,
    );
  }
  return fn as RewardFunction;
}

/**
 * Builds the weighted rewards of a config's `rewards` list. Each entry is a name (`math`), or
 * `{ name, weight?, options? }` for a built-in reward, or `{ module, export?, name?, weight? }` for a
 * function exported by a user module (`(input) => number | null`, core's `RewardFunction`).
 * @throws {ConfigError} naming the entry for an unknown reward (with the closest name), a bad
 * weight or a module without the export.
 */
export async function resolveRewards(
  config: unknown,
  source: string | undefined,
  key = 'rewards',
): Promise<WeightedReward[]> {
  const list = typeof config === 'string' ? config.split(',').map((name) => name.trim()) : config;
  if (!Array.isArray(list) || list.length === 0) {
    throw fail(
      key,
      source,
      `expected a list of rewards (names: ${Object.keys(REWARDS).join(', ')}, or { module: ./reward.js })`,
    );
  }
  const rewards: WeightedReward[] = [];
  const names = new Set<string>();
  for (const [index, item] of list.entries()) {
    const at = `${key}[${index}]`;
    const entry = (typeof item === 'string' ? { name: item } : item) as Record<string, unknown>;
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
      throw fail(
        at,
        source,
        'expected a reward name or { name, weight?, options? } or { module, export? }',
      );
    }
    for (const field of Object.keys(entry)) {
      if (!(ENTRY_KEYS as readonly string[]).includes(field)) {
        const near = closestOption(field, ENTRY_KEYS);
        throw fail(
          `${at}.${field}`,
          source,
          `unknown key${near ? ` (did you mean '${near}'?)` : ''}`,
          ErrorCode.UNKNOWN_OPTION,
        );
      }
    }
    const weight = entry.weight ?? 1;
    if (typeof weight !== 'number' || !Number.isFinite(weight)) {
      throw fail(`${at}.weight`, source, `expected a finite number, got ${String(entry.weight)}`);
    }
    let fn: RewardFunction;
    let name: string;
    if (typeof entry.module === 'string') {
      fn = await loadModuleReward(entry, at, source);
      name = typeof entry.name === 'string' ? entry.name : String(entry.export ?? 'custom');
    } else {
      name = String(entry.name);
      const known = REWARDS[name];
      if (known === undefined) {
        const near = closestOption(name, Object.keys(REWARDS));
        throw fail(
          `${at}.name`,
          source,
          `unknown reward '${name}' (${near ? `did you mean '${near}'? ` : ''}rewards: ${Object.keys(REWARDS).join(', ')}; or { module: ./reward.js })`,
          ErrorCode.UNKNOWN_OPTION,
        );
      }
      try {
        fn = known.factory(entry.options as Record<string, unknown> | undefined);
      } catch (error) {
        throw new ConfigError({
          key: `${at}.options`,
          source,
          message: (error as Error).message,
          code: ErrorCode.INVALID_ARGUMENT,
          cause: error,
        });
      }
    }
    if (names.has(name)) throw fail(`${at}.name`, source, `duplicate reward name '${name}'`);
    names.add(name);
    rewards.push({ name, fn, weight });
  }
  return rewards;
}
