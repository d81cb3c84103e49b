import {
  InvalidArgumentError,
  type Prompt,
  SAMPLE_REQUEST_KEYS,
  type SampleRequest,
  throwIfAborted,
  validateInteger,
  validateOptions,
} from '@rlvr/core';
import type { JobSampling } from '../protocol.js';

/** A checked sample() call: the prompts, n, a resolved seed, the rest of the request. */
export type SampleCall = {
  prompts: Prompt[];
  n: number;
  seed: number;
  sampling: JobSampling;
  signal: AbortSignal | undefined;
};

/**
 * Checks the shape of a `sample()` call (unknown keys, prompts, n, seed, signal) and rejects an
 * already-aborted signal. Value ranges of the sampling fields are checked by the worker's engine.
 */
export function validateSampleCall(
  request: SampleRequest,
  callOptions: unknown,
  functionName: string,
): SampleCall {
  const { signal } = validateOptions<{ signal?: AbortSignal }>(callOptions, {
    parameter: 'options',
    functionName,
    known: ['signal'],
  });
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new InvalidArgumentError({
      parameter: 'options.signal',
      functionName,
      value: signal,
      expected: 'an AbortSignal',
    });
  }
  throwIfAborted(signal, `${functionName}()`);
  const req = validateOptions<SampleRequest>(request, {
    parameter: 'request',
    functionName,
    known: SAMPLE_REQUEST_KEYS,
  });
  if (!Array.isArray(req.prompts) || req.prompts.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'request.prompts',
      functionName,
      value: req.prompts,
      expected: 'a non-empty array of prompts (strings or token id arrays)',
    });
  }
  req.prompts.forEach((prompt, index) => {
    const ok =
      (typeof prompt === 'string' && prompt.length > 0) ||
      (Array.isArray(prompt) && prompt.length > 0 && prompt.every((id) => Number.isInteger(id)));
    if (!ok) {
      throw new InvalidArgumentError({
        parameter: `request.prompts[${index}]`,
        functionName,
        value: prompt,
        expected: 'a non-empty string or array of token ids',
      });
    }
  });
  const n = validateInteger(req.n, { parameter: 'request.n', functionName, min: 1 });
  const seed =
    req.seed === undefined
      ? Math.floor(Math.random() * 2 ** 32)
      : validateInteger(req.seed, { parameter: 'request.seed', functionName });
  const { prompts, n: _n, seed: _seed, ...sampling } = req as SampleRequest;
  return {
    prompts: prompts.map((p) => (typeof p === 'string' ? p : [...p])),
    n,
    seed,
    sampling,
    signal,
  };
}
