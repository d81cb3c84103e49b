import { createOpenAISampler } from '@rlvr/openai';

/** G samples per prompt from any OpenAI-compatible server, seeded, with the model's logprobs. */
export async function sampleServedModel(baseURL: string, model: string) {
  const sampler = createOpenAISampler({
    baseURL, // vLLM: http://127.0.0.1:8000/v1, llama-server: http://127.0.0.1:8080/v1
    model,
    api: 'completions', // or 'chat': a text prompt becomes one user message
    concurrency: 8, // HTTP requests in flight, across prompts and calls
  });
  const groups = await sampler.sample({
    prompts: ['12+30=', '7*6='],
    n: 8, // one request per prompt with n = 8 (8 parallel requests where n > 1 is refused)
    maxNewTokens: 64,
    temperature: 0.8,
    topP: 0.95,
    seed: 0, // prompt i asks with seed + i·1,000,003; parallel sample j with that + j
    topLogprobs: 5, // the model's 5 most likely tokens at every position
  });
  const first = groups[0]![0]!;
  return {
    text: first.text,
    tokenIds: first.tokenIds, // [] when the server returns no token ids (text only)
    logprobs: first.logprobs, // the server's numbers (vLLM default: raw, temperature 1) …
    behaviourLogprobs: first.behaviourLogprobs, // … false: not for importance ratios in training
    topLogprobs: first.topLogprobs,
    server: sampler.server, // detected once from GET /models: 'vllm', 'llama-server', …
    nStrategy: sampler.nStrategy, // 'n', or 'parallel' after a refusal
  };
}
