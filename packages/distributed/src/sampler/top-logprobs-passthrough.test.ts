import type { Completion, SampleRequest } from '@rlvr/core';
import { MockSampler } from '@rlvr/core/test';
import { describe, expect, it } from 'vitest';
import { planRolloutJobs, runRolloutJob } from './run-job.js';
import { validateSampleCall } from './validate-request.js';

describe('topLogprobs and confidenceStop through the queue', () => {
  it('should reach the worker sampler and come back unchanged after a JSON round trip', async () => {
    const request: SampleRequest = {
      prompts: ['1+1='],
      n: 2,
      maxNewTokens: 8,
      seed: 4,
      topLogprobs: 3,
      confidenceStop: { windowSize: 16, threshold: 1.2 },
    };
    const call = validateSampleCall(request, undefined, 'QueueSampler.sample');
    const completion: Completion = {
      text: 'x',
      tokenIds: [5],
      logprobs: [-0.25],
      topLogprobs: [
        [
          { tokenId: 5, logprob: -0.25 },
          { tokenId: 6, logprob: -1.5 },
        ],
      ],
      finishReason: 'confidence',
    };
    const worker = new MockSampler({
      script: (req) => req.prompts.map(() => Array.from({ length: req.n }, () => completion)),
    });
    for (const job of planRolloutJobs(call, 'group')) {
      // BullMQ stores job data and results as JSON
      const stored = JSON.parse(JSON.stringify(job)) as typeof job;
      const result = JSON.parse(JSON.stringify(await runRolloutJob(worker, stored)));
      expect(result).toEqual([completion, completion]);
    }
    expect(worker.sampleCalls[0]).toMatchObject({
      topLogprobs: 3,
      confidenceStop: { windowSize: 16, threshold: 1.2 },
    });
  });
});
