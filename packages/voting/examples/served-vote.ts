import { createOpenAISampler } from '@rlvr/openai';
import { vote } from '@rlvr/voting';

/** Self-consistency over a model you already serve: vLLM, SGLang, llama-server, Ollama, a hosted API. */
export async function selfConsistency(baseURL: string, model: string, question: string) {
  const sampler = createOpenAISampler({ baseURL, model, api: 'chat' }); // baseURL: http://127.0.0.1:8000/v1
  const result = await vote({
    sampler,
    prompt: question,
    n: 16, // one request with n = 16 (16 parallel requests on a server that refuses n > 1)
    sampling: { maxNewTokens: 1024, temperature: 0.6, topP: 0.95, seed: 0 },
  });
  return {
    answer: result.answer, // the most common final answer; 0.5, 1/2 and \frac{1}{2} are one answer
    share: result.share, // its share of the votes
    margin: result.margin, // winner's share − runner-up's: abstain when it is small
    tokensUsed: result.tokensUsed,
  };
}
