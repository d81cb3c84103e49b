import { InvalidArgumentError } from '@rlvr/core';
import { describe, expect, it } from 'vitest';
import {
  buildCharTokenizer,
  buildWordTokenizer,
  createLlamaLayers,
  createRandomCheckpoint,
  createTokenizer,
  encodeSafetensors,
  exportOnnx,
  GraphBuilder,
  parseLlamaConfig,
  parseSafetensors,
  readSafetensors,
  referenceForward,
  validateCheckpoint,
  writeSafetensors,
} from './index.js';

const config = parseLlamaConfig({
  hidden_size: 8,
  num_hidden_layers: 1,
  num_attention_heads: 2,
  intermediate_size: 12,
  vocab_size: 9,
});
const checkpoint = createRandomCheckpoint(config, { seed: 1 });
const tensors = [{ name: 'w', shape: [2], data: new Float32Array(2) }];

/** Runs `call` and returns the UNKNOWN_OPTION error it throws (sync or async). */
async function unknownOption(call: () => unknown): Promise<InvalidArgumentError> {
  let error: unknown;
  try {
    await call();
  } catch (caught) {
    error = caught;
  }
  expect(InvalidArgumentError.isInstance(error)).toBe(true);
  expect((error as InvalidArgumentError).code).toBe('UNKNOWN_OPTION');
  return error as InvalidArgumentError;
}

describe('@rlvr/model options reject unknown keys', () => {
  it.each([
    [
      'createRandomCheckpoint',
      () => createRandomCheckpoint(config, { seed: 1, stdev: 1 } as never),
      /options\.stdev.*'std'/,
    ],
    [
      'buildCharTokenizer',
      () => buildCharTokenizer({ character: 'ab' } as never),
      /options\.character.*'characters'/,
    ],
    [
      'buildWordTokenizer',
      () => buildWordTokenizer({ words: ['a'], chat_template: 'x' } as never),
      /options\.chat_template.*'chatTemplate'/,
    ],
    [
      'specialTokens',
      () => buildCharTokenizer({ characters: 'ab', specialTokens: { eos_token: '</s>' } } as never),
      /options\.specialTokens\.eos_token/,
    ],
    [
      'exportOnnx',
      () => exportOnnx(checkpoint, { doc: 'x' } as never),
      /options\.doc.*'docString'/,
    ],
    [
      'referenceForward',
      () => referenceForward(checkpoint, { inputIds: [[1]], attention_mask: [[1]] } as never),
      /input\.attention_mask.*'attentionMask'/,
    ],
    [
      'encodeSafetensors',
      () => encodeSafetensors(tensors, { dType: 'F16' } as never),
      /options\.dType.*'dtype'/,
    ],
    [
      'parseSafetensors',
      () => parseSafetensors(encodeSafetensors(tensors), { name: ['w'] } as never),
      /options\.name.*'names'/,
    ],
    [
      'readSafetensors',
      () => readSafetensors('/nonexistent.safetensors', { nams: ['w'] } as never),
      /options\.nams.*'names'/,
    ],
    [
      'writeSafetensors',
      () => writeSafetensors('/nonexistent/x.safetensors', tensors, { meta: {} } as never),
      /options\.meta.*'metadata'/,
    ],
    [
      'validateCheckpoint',
      () => validateCheckpoint(checkpoint, { functionName: 'f', check_finite: false } as never),
      /options\.check_finite.*'checkFinite'/,
    ],
    [
      'createTokenizer',
      () => createTokenizer({ json: {}, tokenizer_config: {} } as never),
      /files\.tokenizer_config/,
    ],
  ])('%s', async (_name, call, message) => {
    const error = await unknownOption(call);
    expect(error.message).toMatch(message);
  });

  it('checks the options of the graph API', async () => {
    const error = await unknownOption(() =>
      createLlamaLayers(new GraphBuilder(), checkpoint, { layout: 'gemm' } as never),
    );
    expect(error.message).toMatch(/options\.layout.*'projection'/);
  });

  it('checks the options of tokenizer methods', async () => {
    const tokenizer = createTokenizer(
      buildCharTokenizer({ characters: 'ab', chatTemplate: '{{ messages[0].content }}' }),
    );
    await unknownOption(() => tokenizer.encode('ab', { addSpecialToken: false } as never));
    await unknownOption(() => tokenizer.decode([4], { skip_special_tokens: true } as never));
    const error = await unknownOption(() =>
      tokenizer.applyChatTemplate([{ role: 'user', content: 'a' }], {
        add_generation_prompt: true,
      } as never),
    );
    expect(error.message).toMatch(/'addGenerationPrompt'/);
  });
});
