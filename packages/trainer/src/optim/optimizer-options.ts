import { validateNumber } from '@rlvr/core';
import {
  custom,
  number,
  type OptionsInput,
  object,
  parseOptions,
  withDefault,
} from '@rlvr/options';
import { nullAsUnset, withoutUnsetNulls } from '../null-as-unset.js';
import { TRAINER_DEFAULTS } from '../trainer-defaults.js';

const isPair = (value: unknown) => Array.isArray(value) && value.length === 2;

/** What each AdamW setting is (shared with `GrpoConfig`'s `optimizer`). @internal */
export const OPTIMIZER_DOC = {
  betas: 'β₁, β₂, each in [0, 1) [`adam_beta1`, `adam_beta2`].',
  epsilon: 'ε added to √v̂ [`adam_epsilon`].',
  weightDecay:
    'Decoupled weight decay λ (not applied to biases and norm weights, as Hugging Face) [`weight_decay`].',
};

/**
 * The fields of the `optimizer` (AdamW) option, declared once: {@link AdamWOptions},
 * `ADAMW_DEFAULTS` (PyTorch's / Hugging Face's), the validation and the README table come from
 * them. @internal
 */
export const OPTIMIZER_FIELDS = {
  betas: nullAsUnset(
    withDefault(
      custom<readonly [number, number]>(isPair, 'a pair [β₁, β₂]'),
      [0.9, 0.999] as const,
      OPTIMIZER_DOC.betas,
    ),
  ),
  epsilon: nullAsUnset(
    withDefault(number({ min: 0, exclusiveMin: true }), 1e-8, OPTIMIZER_DOC.epsilon),
  ),
  weightDecay: nullAsUnset(
    withDefault(number({ min: 0 }), TRAINER_DEFAULTS.weightDecay, OPTIMIZER_DOC.weightDecay),
  ),
};

/** The `optimizer` option's schema (see {@link OPTIMIZER_FIELDS}). @internal */
export const OPTIMIZER_SCHEMA = object(OPTIMIZER_FIELDS);

/** Settings of AdamW (the `optimizer` option); a field not given is `ADAMW_DEFAULTS`'. */
export type AdamWOptions = OptionsInput<typeof OPTIMIZER_SCHEMA>;

/** Validates the `optimizer` option and fills `ADAMW_DEFAULTS`. @internal */
export function resolveOptimizer(value: unknown, functionName: string): Required<AdamWOptions> {
  const parameter = 'options.optimizer';
  const { betas, epsilon, weightDecay } = parseOptions(
    OPTIMIZER_SCHEMA,
    withoutUnsetNulls(OPTIMIZER_SCHEMA, value),
    {
      parameter,
      functionName,
    },
  );
  betas.forEach((beta, index) => {
    validateNumber(beta, {
      parameter: `${parameter}.betas[${index}]`,
      functionName,
      min: 0,
      max: 1,
      exclusiveMax: true,
    });
  });
  return { betas: [betas[0], betas[1]], epsilon, weightDecay };
}
