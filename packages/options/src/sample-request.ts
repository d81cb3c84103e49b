import { SAMPLE_REQUEST_KEYS, type SampleRequest } from '@rlvr/core';
import type * as z from 'zod/mini';
import { custom, optional } from './fields.js';

type Key = (typeof SAMPLE_REQUEST_KEYS)[number];
type PassThrough<K extends Key> = z.ZodMiniOptional<
  z.ZodMiniCustom<SampleRequest[K], SampleRequest[K]>
>;

/**
 * The fields of core's `SampleRequest` (in `SAMPLE_REQUEST_KEYS` order) less `omit`, each passed
 * through unchecked to the sampler, which validates them: spread it into a shape and override the
 * fields a layer checks or defaults itself (`maxNewTokens`, `seed`).
 */
export function sampleRequestFields<const Omitted extends Key>(
  omit: readonly Omitted[],
): { [K in Exclude<Key, Omitted>]: PassThrough<K> } {
  const out: Record<string, unknown> = {};
  for (const key of SAMPLE_REQUEST_KEYS) {
    if ((omit as readonly string[]).includes(key)) continue;
    out[key] = optional(
      custom<SampleRequest[typeof key]>(() => true, `as core's \`SampleRequest.${key}\``),
      'Passed to the sampler, which checks it.',
    );
  }
  return out as { [K in Exclude<Key, Omitted>]: PassThrough<K> };
}
