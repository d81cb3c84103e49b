import type { Sampler } from '@rlvr/core';
import { confidenceVote, deepConfOnline } from '@rlvr/voting';

/** DeepConf on one question: online (early-stopped traces, consensus stop), then offline. */
export async function answerWithDeepConf(
  sampler: Sampler, // any @rlvr/core Sampler that returns topLogprobs (@rlvr/rollout's does)
  prompt: string,
  { maxSamples = 64, maxNewTokens = 4096, windowSize = 2048, seed = 0 } = {},
) {
  const online = await deepConfOnline({
    sampler,
    prompt,
    maxSamples, // the budget B, warm-up included
    warmup: 16, // N_init traces set the stop threshold...
    keepTop: 10, // ...at their 90th percentile of lowest group confidence (DeepConf-low)
    consensus: 0.95, // stop once the confidence-weighted winner holds 95% of the weight
    windowSize, // sliding window of the group confidence, in tokens
    topLogprobs: 20, // token confidence = −mean of the top-20 logprobs
    batchSize: 8,
    sampling: { maxNewTokens, temperature: 0.6, topP: 0.95, seed },
  });
  // Offline DeepConf over the same traces: the 90% most confident by bottom-10% group confidence
  // (traces the online run stopped early have finishReason 'confidence' and never vote).
  const offline = confidenceVote(online.completions, {
    keepTop: 90,
    measure: 'bottom-10',
    windowSize,
  });
  return {
    answer: online.answer,
    share: online.share, // the winner's share of the confidence weight
    margin: online.margin, // abstain below a threshold
    entropy: online.entropy,
    tracesUsed: online.samplesUsed,
    tokensUsed: online.tokensUsed,
    earlyStopped: online.earlyStopped,
    stoppedBecause: online.stoppedBecause, // 'consensus' | 'sample-budget' | 'token-budget'
    offlineAnswer: offline.answer,
  };
}
