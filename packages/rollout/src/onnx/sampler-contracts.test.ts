import { AbortedError, InvalidArgumentError } from '@rlvr/core';
import { countParameters, createRandomCheckpoint, parseLlamaConfig } from '@rlvr/model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processLogits, resolveLogitsOptions } from '../generation/logits-processors.js';
import { SequenceTracker } from '../generation/stopping-criteria.js';
import { tinyCheckpoint } from './__fixtures__/tiny-model.js';
import { createOnnxSampler, type OnnxSampler } from './onnx-sampler.js';
import { defaultEngine, LOOP_ENGINE_MIN_PARAMETERS } from './sampler-options.js';

const checkpoint = tinyCheckpoint();

/** The typed error `call` throws or rejects with. */
async function errorOf(call: () => unknown): Promise<InvalidArgumentError> {
  let error: unknown;
  try {
    await call();
  } catch (caught) {
    error = caught;
  }
  expect(InvalidArgumentError.isInstance(error)).toBe(true);
  return error as InvalidArgumentError;
}

describe.each([
  { engine: 'loop', workers: 0 },
  { engine: 'optimum', workers: 0 },
  { engine: 'loop', workers: 1 },
  { engine: 'optimum', workers: 2 },
] as const)('abort contract ($engine engine, $workers workers)', ({ engine, workers }) => {
  let sampler: OnnxSampler;
  beforeAll(async () => {
    // no EOS: every sequence runs to maxNewTokens, so an abort always lands mid-generation
    sampler = await createOnnxSampler({ checkpoint, engine, workers, threads: 1, eosTokenIds: [] });
  });
  afterAll(() => sampler.close());

  it('should reject with AbortedError when the signal aborts mid-generation (never partial completions)', async () => {
    // Regression: sample() resolved with finishReason 'abort' completions.
    const controller = new AbortController();
    const request = { prompts: ['ab', 'c'], n: 4, maxNewTokens: 400, seed: 3 };
    const pending = sampler.sample(request, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('user cancelled')), 5);
    const error = await pending.then(
      (groups) => groups,
      (caught: unknown) => caught,
    );
    expect(AbortedError.isInstance(error)).toBe(true);
    expect((error as AbortedError).cause).toEqual(new Error('user cancelled'));
    // the sampler still works afterwards
    const groups = await sampler.sample({ ...request, maxNewTokens: 3 });
    expect(groups.flat().every((completion) => completion.finishReason === 'length')).toBe(true);
  });

  it('should reject an already aborted signal before any work', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(
      sampler.sample({ prompts: ['a'], n: 1, maxNewTokens: 1 }, { signal: controller.signal }),
    ).rejects.toSatisfy(AbortedError.isInstance);
  });
});

describe('createOnnxSampler options', () => {
  it('should reject unknown keys with the closest option, nested ones included', async () => {
    const unknown = async (call: () => unknown, message: RegExp) => {
      const error = await errorOf(call);
      expect(error.code).toBe('UNKNOWN_OPTION');
      expect(error.message).toMatch(message);
    };
    await unknown(
      () => createOnnxSampler({ checkpoint, worker: 2 } as never),
      /options\.worker.*did you mean 'workers'\?/,
    );
    await unknown(
      () => createOnnxSampler({ checkpoint, tokenizer: { json: {}, configs: {} } } as never),
      /options\.tokenizer\.configs.*'config'/,
    );
    const sampler = await createOnnxSampler({ checkpoint, workers: 0 });
    try {
      await unknown(
        () => sampler.sample({ prompts: ['a'], n: 1, max_new_tokens: 4 } as never),
        /request\.max_new_tokens.*'maxNewTokens'/,
      );
      await unknown(
        () => sampler.sample({ prompts: ['a'], n: 1, maxNewTokens: 1, temprature: 0.5 } as never),
        /request\.temprature.*'temperature'/,
      );
      await unknown(
        () => sampler.sample({ prompts: ['a'], n: 1, maxNewTokens: 1 }, { signl: 1 } as never),
        /options\.signl.*'signal'/,
      );
      await unknown(
        () => sampler.stream({ prompts: ['a'], n: 1, maxNewTokens: 1, top_p: 0.9 } as never),
        /request\.top_p.*'topP'/,
      );
      await unknown(
        () => sampler.updateWeights({ step: 1, tensor: [] } as never),
        /snapshot\.tensor.*'tensors'/,
      );
    } finally {
      await sampler.close();
    }
    await unknown(() => processLogits([1, 2], { top_k: 1 } as never), /options\.top_k.*'topK'/);
    await unknown(
      () => new SequenceTracker({ maxNewTokens: 1, stops: ['x'] } as never),
      /options\.stops.*'stop'/,
    );
  });

  it('should reject options that do nothing in the combination given', async () => {
    const ineffective = async (call: () => unknown, parameter: string) => {
      const error = await errorOf(call);
      expect(error.code).toBe('INEFFECTIVE_OPTION');
      expect(error.parameter).toBe(parameter);
    };
    await ineffective(
      () => createOnnxSampler({ checkpoint, engine: 'optimum', stepsPerRun: 8 }),
      'options.stepsPerRun',
    );
    await ineffective(
      () => createOnnxSampler({ onnxPath: '/x.onnx', stepsPerRun: 8 }),
      'options.stepsPerRun',
    );
    // Regression: weightSync did not exist (the loop engine always fed its weights as inputs)
    await ineffective(
      () => createOnnxSampler({ onnxPath: '/x.onnx', weightSync: 'rebuild' }),
      'options.weightSync',
    );
    const inputsOnOptimum = await errorOf(() =>
      createOnnxSampler({ checkpoint, engine: 'optimum', weightSync: 'inputs' }),
    );
    expect(inputsOnOptimum.code).toBe('INVALID_ARGUMENT');
    expect(inputsOnOptimum.parameter).toBe('options.weightSync');
    const badMode = await errorOf(() =>
      createOnnxSampler({ checkpoint, weightSync: 'input' as never }),
    );
    expect(badMode.code).toBe('INVALID_ARGUMENT');
    expect(badMode.parameter).toBe('options.weightSync');
    const { tokenizer: _tokenizer, ...withoutTokenizer } = checkpoint;
    await ineffective(
      () => createOnnxSampler({ checkpoint: withoutTokenizer, promptFormat: 'chat' }),
      'options.promptFormat',
    );
    // greedy decoding takes the argmax, which top-k / top-p / min-p always keep
    await ineffective(() => resolveLogitsOptions({ temperature: 0, topP: 0.9 }), 'options.topP');
    const sampler = await createOnnxSampler({ checkpoint, workers: 0 });
    try {
      for (const filter of [{ topK: 5 }, { topP: 0.5 }, { minP: 0.1 }]) {
        await ineffective(
          () =>
            sampler.sample({ prompts: ['a'], n: 1, maxNewTokens: 2, temperature: 0, ...filter }),
          `request.${Object.keys(filter)[0]}`,
        );
      }
      // the filters' neutral values and the repetition penalty are fine with greedy decoding
      const [[greedy]] = (await sampler.sample({
        prompts: ['a'],
        n: 1,
        maxNewTokens: 2,
        temperature: 0,
        topK: 0,
        topP: 1,
        repetitionPenalty: 1.2,
      })) as unknown as [[{ logprobs: number[] }]];
      expect(greedy.logprobs).toEqual([0, 0]);
    } finally {
      await sampler.close();
    }
  });

  it('should pick the faster engine for the model size when engine is not given', async () => {
    // Regression: checkpoints under 1M parameters (5M with several workers) got the optimum engine,
    // measured when every loop weight update rebuilt its session; with in-place updates the loop
    // engine is faster per GRPO step from 0.3M parameters on (README "Engines").
    const tiny = await createOnnxSampler({ checkpoint, workers: 0 });
    const steps = await createOnnxSampler({ checkpoint, workers: 0, stepsPerRun: 4 });
    const inputs = await createOnnxSampler({ checkpoint, workers: 0, weightSync: 'inputs' });
    const config = parseLlamaConfig({
      vocab_size: 22,
      hidden_size: 96,
      num_hidden_layers: 3,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      intermediate_size: 256,
    }); // apps/teacher-student's default teacher, 0.31M parameters
    expect(countParameters(config)).toBeGreaterThanOrEqual(LOOP_ENGINE_MIN_PARAMETERS);
    const small = await createOnnxSampler({
      checkpoint: createRandomCheckpoint(config, { seed: 1 }),
      workers: 2,
      threads: 1,
    });
    try {
      expect(tiny.engine).toBe('optimum'); // 0.01M parameters
      expect(steps.engine).toBe('loop'); // stepsPerRun is a loop-engine setting
      expect(inputs.engine).toBe('loop'); // so is weightSync: 'inputs'
      expect(small.engine).toBe('loop'); // 0.31M parameters, two workers
    } finally {
      await Promise.all([tiny.close(), steps.close(), inputs.close(), small.close()]);
    }
    expect(defaultEngine(LOOP_ENGINE_MIN_PARAMETERS - 1)).toBe('optimum');
    expect(defaultEngine(4.9e6)).toBe('loop');
  });
});
