import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AutoModelForCausalLM, AutoTokenizer, env, Tensor } from '@huggingface/transformers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { saveCheckpoint } from '../checkpoint/checkpoint-io.js';
import { createRandomCheckpoint } from '../checkpoint/random-init.js';
import { parseLlamaConfig } from '../config/llama-config.js';
import { referenceForward } from '../reference/reference-forward.js';
import { buildCharTokenizer } from '../tokenizer/build-tokenizer.js';

// transformers.js loads a saved folder (config.json + tokenizer + onnx/model.onnx) offline and runs
// it through its own Optimum-style KV-cache loop: proof that the export is interoperable.
describe('exported folder in transformers.js', () => {
  let dir: string;
  const config = parseLlamaConfig({
    hidden_size: 32,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    intermediate_size: 48,
    vocab_size: 20,
    bos_token_id: 1,
    eos_token_id: 2,
    pad_token_id: 0,
  });
  const checkpoint = {
    ...createRandomCheckpoint(config, { seed: 3, std: 0.3, perturbStd: 0.1 }),
    tokenizer: buildCharTokenizer({ characters: '0123456789+=' }),
    generationConfig: { bos_token_id: 1, eos_token_id: 2, pad_token_id: 0 },
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rlvr-transformers-js-'));
    await saveCheckpoint(join(dir, 'tiny'), checkpoint, { onnx: true });
    env.allowRemoteModels = false;
    env.localModelPath = dir;
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('gives the reference logits and the reference greedy continuation', async () => {
    const model = await AutoModelForCausalLM.from_pretrained('tiny', { dtype: 'fp32' });
    const tokenizer = await AutoTokenizer.from_pretrained('tiny');
    const prompt = [5, 6, 14, 7];
    expect(tokenizer('12+3').input_ids.tolist()).toEqual([prompt.map(BigInt)]);
    const ones = new Tensor('int64', BigInt64Array.from(prompt.map(() => 1n)), [1, prompt.length]);
    const inputIds = new Tensor('int64', BigInt64Array.from(prompt.map(BigInt)), [
      1,
      prompt.length,
    ]);
    const output = (await model({ input_ids: inputIds, attention_mask: ones })) as {
      logits: { data: Float32Array };
    };
    const reference = referenceForward(checkpoint, { inputIds: [prompt] });
    let maxDiff = 0;
    output.logits.data.forEach((value, index) => {
      maxDiff = Math.max(maxDiff, Math.abs(value - (reference.logits.data[index] as number)));
    });
    expect(maxDiff).toBeLessThan(1e-4);

    const generated = (await model.generate({
      input_ids: inputIds,
      attention_mask: ones,
      max_new_tokens: 6,
      do_sample: false,
    })) as { tolist(): bigint[][] };
    const tokens = [...prompt];
    for (let step = 0; step < 6; step++) {
      const { logits } = referenceForward(checkpoint, { inputIds: [tokens] });
      const last = logits.data.subarray((tokens.length - 1) * config.vocab_size);
      let best = 0;
      for (let id = 1; id < config.vocab_size; id++) {
        if ((last[id] as number) > (last[best] as number)) best = id;
      }
      tokens.push(best);
      if (best === 2) break;
    }
    expect(generated.tolist()[0]?.map(Number)).toEqual(tokens);
    await model.dispose();
  });
});
