/**
 * Test-only helpers: run a GGUF file in llama.cpp through node-llama-cpp (a dev dependency) and
 * compare it with the float64 reference. Not exported from the package.
 * @internal
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { getLlama, type Llama, LlamaLogLevel, type Token } from 'node-llama-cpp';
import type { Checkpoint } from '../checkpoint/checkpoint.js';
import { type ReferenceOptions, referenceForwardWith } from '../reference/reference-forward.js';
import { float16BitsToFloat32, float32ToFloat16Bits } from '../safetensors/float16.js';
import { type GgufDtype, tensorType } from './export-gguf.js';
import { decodeTensorData, encodeTensorData } from './gguf-tensor-data.js';

let shared: Promise<Llama> | undefined;

/** llama.cpp's prebuilt CPU binary, loaded once per test file. */
export function loadLlamaCpp(): Promise<Llama> {
  shared ??= getLlama({
    gpu: false,
    build: 'never',
    skipDownload: true,
    logLevel: process.env.LLAMA_LOG === '1' ? LlamaLogLevel.warn : LlamaLogLevel.error,
  });
  return shared;
}

const SAMPLING = { temperature: 1, topK: 0, topP: 1, minP: 0 } as const;

/** Log-probabilities of the next token at every position, float64 reference. */
export function referenceLogProbs(
  checkpoint: Checkpoint,
  ids: number[],
  options: ReferenceOptions = {},
): Float64Array[] {
  const { logits } = referenceForwardWith(checkpoint, { inputIds: [ids] }, options);
  const vocab = logits.dims[2] as number;
  return ids.map((_, position) => {
    const row = logits.data.subarray(position * vocab, (position + 1) * vocab);
    let max = -Infinity;
    for (const value of row) max = Math.max(max, value);
    let sum = 0;
    for (const value of row) sum += Math.exp(value - max);
    const logSum = max + Math.log(sum);
    return Float64Array.from(row, (value) => value - logSum);
  });
}

/** A GGUF file opened in llama.cpp with an F32 KV cache and no flash attention. */
export async function openInLlamaCpp(
  dir: string,
  bytes: Uint8Array,
  vocabSize: number,
  file = 'model.gguf',
) {
  const path = join(dir, file);
  await writeFile(path, bytes);
  const llama = await loadLlamaCpp();
  const model = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
  const context = await model.createContext({
    contextSize: 256,
    batchSize: 64,
    threads: 1,
    flashAttention: false,
    experimentalKvCacheKeyType: 'F32',
    experimentalKvCacheValueType: 'F32',
  });
  return {
    model,
    /** Log p of every vocab entry after each token, feeding `ids` in the given chunks. */
    async logProbs(chunks: number[][]): Promise<Float64Array[]> {
      const sequence = context.getSequence();
      const rows: Float64Array[] = [];
      for (const chunk of chunks) {
        const results = await sequence.controlledEvaluate(
          chunk.map((token) => [
            token as Token,
            { generateNext: { probabilities: true, options: SAMPLING } },
          ]),
        );
        for (const result of results) {
          const probabilities = result?.next.probabilities;
          if (!probabilities) throw new Error('llama.cpp returned no probabilities');
          const row = new Float64Array(vocabSize);
          row.fill(-Infinity);
          for (const [token, p] of probabilities) row[token] = Math.log(p);
          rows.push(row);
        }
      }
      sequence.dispose();
      return rows;
    },
    /** Greedy continuation of `prompt` for `steps` tokens. */
    async greedy(prompt: number[], steps: number): Promise<number[]> {
      const sequence = context.getSequence();
      const out: number[] = [];
      let input = prompt;
      for (let step = 0; step < steps; step++) {
        const items = input.map((token, index) =>
          index === input.length - 1
            ? ([token, { generateNext: { token: true, options: { temperature: 0 } } }] as const)
            : token,
        );
        const results = await sequence.controlledEvaluate(items as never);
        const next = results[input.length - 1]?.next.token;
        if (next == null) throw new Error('llama.cpp generated no token');
        out.push(next);
        input = [next];
      }
      sequence.dispose();
      return out;
    },
    async dispose(): Promise<void> {
      await context.dispose();
      await model.dispose();
    },
  };
}

/** Greedy continuation under the float64 reference (full recompute each step; tiny models). */
export function referenceGreedy(
  checkpoint: Checkpoint,
  prompt: number[],
  steps: number,
  options: ReferenceOptions = {},
): number[] {
  const ids = [...prompt];
  const out: number[] = [];
  for (let step = 0; step < steps; step++) {
    const rows = referenceLogProbs(checkpoint, ids, options);
    const last = rows[rows.length - 1] as Float64Array;
    let best = 0;
    for (let token = 1; token < last.length; token++) {
      if ((last[token] as number) > (last[best] as number)) best = token;
    }
    out.push(best);
    ids.push(best);
  }
  return out;
}

/** max |a − b| over every position and vocab entry (`exp` compares probabilities instead). */
export function maxAbsDifference(a: Float64Array[], b: Float64Array[], exp = false): number {
  if (a.length !== b.length) throw new Error(`${a.length} rows vs ${b.length}`);
  let max = 0;
  for (const [row, values] of a.entries()) {
    const other = b[row] as Float64Array;
    if (values.length !== other.length)
      throw new Error(`row ${row}: ${values.length} vs ${other.length}`);
    for (let index = 0; index < values.length; index++) {
      const x = values[index] as number;
      const y = other[index] as number;
      max = Math.max(max, Math.abs(exp ? Math.exp(x) - Math.exp(y) : x - y));
    }
  }
  return max;
}

/** The checkpoint with every weight rounded as `dtype` stores it (what llama.cpp actually reads). */
export function roundedCheckpoint(checkpoint: Checkpoint, dtype: GgufDtype): Checkpoint {
  const tensors = checkpoint.tensors.map((tensor) => {
    const type = tensorType(tensor.shape, dtype);
    const bytes = encodeTensorData(tensor.data, type);
    return { ...tensor, data: decodeTensorData(bytes, type, tensor.data.length) as Float32Array };
  });
  return { ...checkpoint, tensors };
}

const f = Math.fround;
const GELU_COEF_A = f(0.044715);
const SQRT_2_OVER_PI = f(0.7978845608028654);
const geluTable = new Map<number, number>();

/**
 * llama.cpp's CPU GELU (`ggml_vec_geglu_f32` with `GGML_GELU_FP16`, on by default): the input
 * rounded to float16, looked up in a table of `gelu_f32` values rounded to float16; 0 below −10,
 * the identity above 10. The float32 evaluation order of `ggml_gelu_f32` is kept.
 */
export function llamaCppGelu(x: number): number {
  const input = f(x);
  if (input <= -10) return 0;
  if (input >= 10) return input;
  const bits = float32ToFloat16Bits(input);
  let value = geluTable.get(bits);
  if (value === undefined) {
    const h = float16BitsToFloat32(bits);
    const inner = f(f(SQRT_2_OVER_PI * h) * f(1 + f(f(GELU_COEF_A * h) * h)));
    const gelu = f(f(0.5 * h) * f(1 + f(Math.tanh(inner))));
    value = float16BitsToFloat32(float32ToFloat16Bits(gelu));
    geluTable.set(bits, value);
  }
  return value;
}
