import { InvalidArgumentError } from '@rlvr/core';
import type { LoraAdapter } from '@rlvr/model';
import {
  boolean,
  custom,
  integer,
  number,
  type OptionsInput,
  object,
  optional,
  parseOptions,
  withDefault,
} from '@rlvr/options';
import { LORA_MODULES, type LoraModule } from '../native/layer-graph.js';
import type { LoraSettings } from '../native/lora-adapters.js';
import { nullAsUnset, withoutUnsetNulls } from '../null-as-unset.js';

const PEFT_MODULES: Record<string, LoraModule> = Object.fromEntries(
  LORA_MODULES.map((module) => [`${module}_proj`, module]),
);
const PEFT_NAMES = Object.keys(PEFT_MODULES).sort();
const PEFT_LIST = Object.keys(PEFT_MODULES).join(', ');

/** PEFT names, for the "did you mean" hint only. */
const LORA_ALIASES = {
  lora_alpha: 'alpha',
  lora_dropout: 'dropout',
  target_modules: 'targetModules',
  use_rslora: 'rslora',
  rank: 'r',
} as const;

const isAdapter = (value: unknown) =>
  value !== null &&
  typeof value === 'object' &&
  typeof (value as { config?: unknown }).config === 'object';

/**
 * The `lora` option (Hugging Face PEFT's `LoraConfig`; its names in brackets, its defaults),
 * declared once: {@link LoraOptions}, `LORA_DEFAULTS`, the validation and the README table come
 * from it. The adapter's own settings and the target names are checked in {@link resolveLora}.
 * @internal
 */
export const LORA_SCHEMA = object(
  {
    r: nullAsUnset(withDefault(integer({ min: 1 }), 8, 'Rank r [`r`].')),
    alpha: nullAsUnset(
      withDefault(
        number({ min: 0, exclusiveMin: true }),
        8,
        "α: the adapters' output is scaled by α / r [`lora_alpha`].",
      ),
    ),
    dropout: nullAsUnset(
      withDefault(
        number({ min: 0, max: 1, exclusiveMax: true }),
        0,
        "Dropout probability on the adapters' inputs during training steps [`lora_dropout`].",
      ),
    ),
    targetModules: nullAsUnset(
      withDefault(
        custom<readonly string[] | 'all-linear'>(
          () => true,
          `'all-linear' or a non-empty array of ${PEFT_LIST}`,
        ),
        ['q_proj', 'v_proj'] as const,
        "Projections to adapt: PEFT module names or `'all-linear'` (all of them; not `lm_head`, as PEFT); the default is PEFT's for Llama/Qwen2 [`target_modules`].",
      ),
    ),
    rslora: withDefault(boolean(), false, 'rsLoRA: scale α / √r instead of α / r [`use_rslora`].'),
    seed: nullAsUnset(
      withDefault(
        integer({ min: 0 }),
        0,
        "Seed of the adapters' initialization and of the dropout masks.",
      ),
    ),
    adapter: optional(
      custom<LoraAdapter>(
        isAdapter,
        "a LoraAdapter { config, tensors } (@rlvr/model's loadLoraAdapter)",
      ),
      "Start from these adapter weights (e.g. `loadLoraAdapter(dir)` from @rlvr/model, PEFT's `PeftModel.from_pretrained(..., is_trainable=True)`): its `r`, `alpha`, `targetModules` and `rslora` are used (a different explicit value is an error); `dropout` is this option's.",
    ),
  },
  { aliases: LORA_ALIASES },
);

/**
 * LoRA adapters (Hugging Face PEFT's `LoraConfig`; see {@link LORA_SCHEMA} for each field): the
 * base model is frozen and only the adapters train. Native engine only.
 */
export type LoraOptions = OptionsInput<typeof LORA_SCHEMA>;

/** {@link LoraOptions} with its defaults filled in (targets as module keys). @internal */
export type ResolvedLora = LoraSettings & { adapter?: LoraAdapter };

/** Validates {@link LoraOptions} and fills PEFT's defaults. @internal */
export function resolveLora(value: unknown, functionName: string): ResolvedLora {
  const context = { parameter: 'options.lora', functionName };
  parseOptions(LORA_SCHEMA, withoutUnsetNulls(LORA_SCHEMA, value), context); // the keys and values given
  const given = (value ?? {}) as LoraOptions;
  // an adapter's settings are validated as given ones
  const merged = fromAdapter(given, functionName);
  const parsed = parseOptions(LORA_SCHEMA, withoutUnsetNulls(LORA_SCHEMA, merged), context);
  return {
    r: parsed.r,
    alpha: parsed.alpha,
    dropout: parsed.dropout,
    targetModules: targetModules(parsed.targetModules, functionName),
    rslora: parsed.rslora,
    seed: parsed.seed,
    ...(given.adapter ? { adapter: given.adapter } : {}),
  };
}

/** The PEFT target names as module keys, in layer order. */
function targetModules(targets: readonly string[] | 'all-linear', functionName: string) {
  if (targets === 'all-linear') return [...LORA_MODULES];
  if (!Array.isArray(targets) || targets.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'options.lora.targetModules',
      functionName,
      value: targets,
      expected: `'all-linear' or a non-empty array of ${PEFT_LIST}`,
    });
  }
  const modules = targets.map((name, index) => {
    const module = PEFT_MODULES[name as string];
    if (module === undefined) {
      throw new InvalidArgumentError({
        parameter: `options.lora.targetModules[${index}]`,
        functionName,
        value: name,
        expected: `one of ${PEFT_LIST} (Llama/Qwen2 projection names)`,
      });
    }
    return module;
  });
  return LORA_MODULES.filter((module) => modules.includes(module));
}

/** `lora` with an `adapter`'s settings filled in (an explicit one that differs is an error). */
function fromAdapter(lora: LoraOptions, functionName: string): LoraOptions {
  const { adapter } = lora;
  if (adapter === undefined) return lora;
  const fromFile: Partial<LoraOptions> = {
    r: adapter.config.r,
    alpha: adapter.config.alpha,
    targetModules: adapter.config.targetModules,
    rslora: adapter.config.rslora,
  };
  for (const key of ['r', 'alpha', 'rslora'] as const) {
    if (lora[key] !== undefined && lora[key] !== fromFile[key]) {
      throw new InvalidArgumentError({
        parameter: `options.lora.${key}`,
        functionName,
        value: lora[key],
        expected: `the adapter's value (${JSON.stringify(fromFile[key])}) or none`,
      });
    }
  }
  const targets = lora.targetModules;
  if (
    targets !== undefined &&
    JSON.stringify(targets === 'all-linear' ? [...PEFT_NAMES] : [...targets].sort()) !==
      JSON.stringify([...adapter.config.targetModules].sort())
  ) {
    throw new InvalidArgumentError({
      parameter: 'options.lora.targetModules',
      functionName,
      value: targets,
      expected: `the adapter's targets (${adapter.config.targetModules.join(', ')}) or none`,
    });
  }
  return { ...fromFile, ...lora, targetModules: adapter.config.targetModules };
}
