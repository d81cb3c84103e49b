import { describe, expect, it } from 'vitest';
import { AbortedError } from '../errors/aborted-error.js';
import { UnsupportedSpecificationError } from '../errors/unsupported-specification-error.js';
import { MockSampler, mockCompletion } from '../testing/mock-sampler.js';
import {
  assertSampler,
  type Completion,
  isAbortedGroup,
  SAMPLE_REQUEST_DEFAULTS,
  SAMPLE_REQUEST_KEYS,
  type SampleRequest,
  validateConfidenceRequest,
} from './sampler.js';

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
      topLogprobs: 5,
      confidenceStop: { windowSize: 16, threshold: 1.5 },
    };
    expect([...SAMPLE_REQUEST_KEYS].sort()).toEqual(Object.keys(request).sort());
  });
});

describe('SAMPLE_REQUEST_DEFAULTS', () => {
  it('should hold the documented defaults of optional SampleRequest fields, frozen', () => {
    expect(SAMPLE_REQUEST_DEFAULTS).toEqual({
      temperature: 1,
      topP: 1,
      topK: 0,
      minP: 0,
      repetitionPenalty: 1,
    });
    for (const key of Object.keys(SAMPLE_REQUEST_DEFAULTS)) {
      expect(SAMPLE_REQUEST_KEYS).toContain(key);
    }
    expect(Object.isFrozen(SAMPLE_REQUEST_DEFAULTS)).toBe(true);
  });
});

describe('validateConfidenceRequest', () => {
  it('should return topLogprobs 0 when not asked and the checked fields otherwise', () => {
    expect(validateConfidenceRequest({})).toEqual({ topLogprobs: 0 });
    expect(
      validateConfidenceRequest({
        topLogprobs: 20,
        confidenceStop: { windowSize: 2048, threshold: 17.5 },
      }),
    ).toEqual({ topLogprobs: 20, confidenceStop: { windowSize: 2048, threshold: 17.5 } });
  });

  it('should name the parameter of every bad field', () => {
    const bad: [Partial<SampleRequest>, RegExp][] = [
      [{ topLogprobs: 0 }, /request\.topLogprobs/],
      [{ topLogprobs: 2.5 }, /request\.topLogprobs/],
      [{ topLogprobs: 2, confidenceStop: { windowSize: 0, threshold: 1 } }, /windowSize/],
      [{ topLogprobs: 2, confidenceStop: { windowSize: 4, threshold: 0 } }, /threshold/],
      [{ topLogprobs: 2, confidenceStop: { windowSize: 4, threshold: Number.NaN } }, /threshold/],
      [{ confidenceStop: { windowSize: 4, threshold: 1 } }, /request\.confidenceStop.*topLogprobs/],
    ];
    for (const [request, message] of bad) {
      expect(() => validateConfidenceRequest(request, 'sample')).toThrow(message);
    }
    expect(() =>
      validateConfidenceRequest({
        topLogprobs: 2,
        confidenceStop: { window: 4, threshold: 1 } as never,
      }),
    ).toThrow(expect.objectContaining({ code: 'UNKNOWN_OPTION' }));
  });

  it('should survive JSON (a remote sampler gets the same request)', () => {
    const request: SampleRequest = {
      prompts: ['x'],
      n: 2,
      maxNewTokens: 8,
      topLogprobs: 3,
      confidenceStop: { windowSize: 4, threshold: 0.5 },
    };
    const copy = JSON.parse(JSON.stringify(request)) as SampleRequest;
    expect(copy).toEqual(request);
    expect(validateConfidenceRequest(copy)).toEqual(validateConfidenceRequest(request));
  });

  it("should not make a group with a 'confidence' completion an aborted group", () => {
    const group: Pick<Completion, 'finishReason'>[] = [
      { finishReason: 'stop' },
      { finishReason: 'confidence' },
    ];
    expect(isAbortedGroup(group)).toBe(false);
    expect(isAbortedGroup([...group, { finishReason: 'abort' }])).toBe(true);
  });
});
