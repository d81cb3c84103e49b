import { describe, expect, it } from 'vitest';
import { AbortedError } from '../errors/aborted-error.js';
import { UnsupportedSpecificationError } from '../errors/unsupported-specification-error.js';
import { MockSampler, mockCompletion } from '../testing/mock-sampler.js';
import { assertSampler, SAMPLE_REQUEST_KEYS, type SampleRequest } from './sampler.js';

describe('assertSampler', () => {
  it('should accept a v1 sampler and reject others with typed errors', () => {
    const sampler = new MockSampler({ script: [] });
    expect(() => assertSampler(sampler)).not.toThrow();
    expect(() => assertSampler({ sample: async () => [] })).toThrow(UnsupportedSpecificationError);
    expect(() =>
      assertSampler({ specificationVersion: 'v2', sample: async () => [] }, 'teacher'),
    ).toThrow(/teacher.specificationVersion.*'v1'.*"v2"/);
    expect(() => assertSampler(42)).toThrow(/parameter 'sampler'/);
  });
});

describe('MockSampler', () => {
  it('should record calls and replay scripted results', async () => {
    const sampler = new MockSampler({
      script: (request) =>
        request.prompts.map(() =>
          Array.from({ length: request.n }, (_, i) => mockCompletion(`${i}`)),
        ),
    });
    const result = await sampler.sample({ prompts: ['a', [1, 2]], n: 3, maxNewTokens: 4 });
    expect(result).toHaveLength(2);
    expect(result[1]!.map((completion) => completion.text)).toEqual(['0', '1', '2']);
    expect(sampler.sampleCalls).toEqual([{ prompts: ['a', [1, 2]], n: 3, maxNewTokens: 4 }]);
    await sampler.updateWeights({ step: 1, tensors: [] });
    expect(sampler.weightUpdates).toHaveLength(1);
  });

  it('should replay a fixed list and fail loudly past its end', async () => {
    const sampler = new MockSampler({
      script: [[[mockCompletion('x', { finishReason: 'length', logprob: -0.5 })]]],
    });
    const [first] = await sampler.sample({ prompts: ['p'], n: 1, maxNewTokens: 1 });
    expect(first![0]).toEqual({
      text: 'x',
      tokenIds: [120],
      logprobs: [-0.5],
      finishReason: 'length',
    });
    await expect(sampler.sample({ prompts: ['p'], n: 1, maxNewTokens: 1 })).rejects.toThrow(
      /no scripted result/,
    );
  });

  it('should honour an aborted signal', async () => {
    const sampler = new MockSampler({ script: [] });
    const controller = new AbortController();
    controller.abort('stop');
    await expect(
      sampler.sample({ prompts: [], n: 1, maxNewTokens: 1 }, { signal: controller.signal }),
    ).rejects.toSatisfy((error) => AbortedError.isInstance(error));
  });
});

describe('SAMPLE_REQUEST_KEYS', () => {
  it('should list every SampleRequest key exactly once', () => {
    const request: Required<SampleRequest> = {
      prompts: [],
      n: 1,
      maxNewTokens: 1,
      temperature: 1,
      topP: 1,
      topK: 0,
      minP: 0,
      repetitionPenalty: 1,
      stop: [],
      seed: 0,
      returnModelLogprobs: false,
    };
    expect([...SAMPLE_REQUEST_KEYS].sort()).toEqual(Object.keys(request).sort());
  });
});
