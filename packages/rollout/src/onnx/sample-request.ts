import {
  InvalidArgumentError,
  SAMPLE_REQUEST_KEYS,
  type SampleRequest,
  validateConfidenceRequest,
  validateInteger,
  validateOptions,
} from '@rlvr/core';
import type { GenerationSettings, SequenceJob } from '../engine/generate-batch.js';
import { resolveLogitsOptions } from '../generation/logits-processors.js';
import type { RolloutTokenizer } from '../tokenizer/rollout-tokenizer.js';

/** A checked request as the engines take it. @internal */
export type PreparedRequest = {
  jobs: SequenceJob[];
  settings: GenerationSettings;
  promptCount: number;
  n: number;
};

/** What a request is checked against. @internal */
export type RequestContext = {
  functionName: string;
  tokenizer: RolloutTokenizer | undefined;
  promptFormat: 'raw' | 'chat';
  vocabSize: number;
  eosTokenIds: number[];
};

function promptIds(prompt: unknown, index: number, context: RequestContext): number[] {
  const { functionName, tokenizer, vocabSize } = context;
  const fail = (expected: string): never => {
    throw new InvalidArgumentError({
      parameter: `request.prompts[${index}]`,
      functionName,
      value: prompt,
      expected,
    });
  };
  let ids: number[] = [];
  if (typeof prompt === 'string') {
    if (!tokenizer) fail('token ids (the sampler has no tokenizer for text prompts)');
    else
      ids =
        context.promptFormat === 'chat'
          ? tokenizer.applyChatTemplate(prompt)
          : tokenizer.encode(prompt);
  } else if (Array.isArray(prompt)) {
    ids = [...prompt];
    if (ids.some((id) => !Number.isInteger(id) || id < 0 || id >= vocabSize)) {
      fail(`token ids in [0, ${vocabSize})`);
    }
  } else {
    fail('a string or an array of token ids');
  }
  if (ids.length === 0) fail('a prompt of at least one token');
  return ids;
}

/**
 * Checks a {@link SampleRequest} (unknown keys, each field, filters that greedy decoding would
 * ignore) and turns it into one job per completion.
 * @throws {InvalidArgumentError} naming the field (`request.topP`, `request.prompts[2]`, …).
 * @internal
 */
export function prepareRequest(request: SampleRequest, context: RequestContext): PreparedRequest {
  const { functionName, tokenizer } = context;
  const req = validateOptions<SampleRequest>(request, {
    parameter: 'request',
    functionName,
    known: SAMPLE_REQUEST_KEYS,
  });
  if (!Array.isArray(req.prompts)) {
    throw new InvalidArgumentError({
      parameter: 'request.prompts',
      functionName,
      value: req.prompts,
      expected: 'an array of prompts (strings or token id arrays)',
    });
  }
  const n = validateInteger(req.n, { parameter: 'request.n', functionName, min: 1 });
  const maxNewTokens = validateInteger(req.maxNewTokens, {
    parameter: 'request.maxNewTokens',
    functionName,
    min: 0,
  });
  const sampling = resolveLogitsOptions(
    {
      temperature: req.temperature,
      topK: req.topK,
      topP: req.topP,
      minP: req.minP,
      repetitionPenalty: req.repetitionPenalty,
    },
    functionName,
    'request',
  );
  const stop = req.stop ?? [];
  if (!Array.isArray(stop) || stop.some((item) => typeof item !== 'string')) {
    throw new InvalidArgumentError({
      parameter: 'request.stop',
      functionName,
      value: stop,
      expected: 'an array of strings',
    });
  }
  if (stop.length > 0 && !tokenizer) {
    throw new InvalidArgumentError({
      parameter: 'request.stop',
      functionName,
      value: stop,
      expected: 'no stop strings when the sampler has no tokenizer (options.tokenizer)',
    });
  }
  if (req.returnModelLogprobs !== undefined && typeof req.returnModelLogprobs !== 'boolean') {
    throw new InvalidArgumentError({
      parameter: 'request.returnModelLogprobs',
      functionName,
      value: req.returnModelLogprobs,
      expected: 'a boolean',
    });
  }
  const confidence = validateConfidenceRequest(req, functionName);
  if (confidence.topLogprobs > context.vocabSize) {
    throw new InvalidArgumentError({
      parameter: 'request.topLogprobs',
      functionName,
      value: req.topLogprobs,
      expected: `an integer in [1, ${context.vocabSize}] (the vocabulary size)`,
    });
  }
  const seed =
    req.seed === undefined
      ? Math.floor(Math.random() * 2 ** 32)
      : validateInteger(req.seed, { parameter: 'request.seed', functionName });
  const jobs: SequenceJob[] = [];
  req.prompts.forEach((prompt, promptIndex) => {
    const ids = promptIds(prompt, promptIndex, context);
    for (let sampleIndex = 0; sampleIndex < n; sampleIndex++)
      jobs.push({ promptIndex, sampleIndex, promptTokenIds: ids });
  });
  const settings: GenerationSettings = {
    sampling,
    maxNewTokens,
    stop: [...stop],
    seed,
    returnModelLogprobs: req.returnModelLogprobs === true,
    eosTokenIds: context.eosTokenIds,
    ...(confidence.topLogprobs > 0 ? { topLogprobs: confidence.topLogprobs } : {}),
    ...(confidence.confidenceStop ? { confidenceStop: confidence.confidenceStop } : {}),
  };
  return { jobs, settings, promptCount: req.prompts.length, n };
}
