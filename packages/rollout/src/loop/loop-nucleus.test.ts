import fc from 'fast-check';
import type * as Ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processLogits } from '../generation/logits-processors.js';
import { loadOrt } from '../onnx/ort.js';
import type { NucleusMethod, Sampling } from './loop-sampling.js';
import { samplingGraph, samplingScalarFeeds } from './sampling-graph.js';

const VOCAB = 300;
let ort: typeof Ort;
const sessions = new Map<NucleusMethod, Ort.InferenceSession>();

beforeAll(async () => {
  ort = await loadOrt();
  for (const method of ['search', 'sort'] as const) {
    sessions.set(method, await ort.InferenceSession.create(samplingGraph(VOCAB, method)));
  }
});
afterAll(async () => {
  for (const session of sessions.values()) await session.release();
});

type Case = { rows: number[][]; uniforms: number[]; topP: number; temperature: number };

async function sample(method: NucleusMethod, input: Case, cheapSize: number) {
  const { Tensor } = ort;
  const rows = input.rows.length;
  const feeds: Record<string, Ort.Tensor> = {
    logits: new Tensor('float32', Float32Array.from(input.rows.flat()), [rows, VOCAB]),
    uniform: new Tensor('float32', Float32Array.from(input.uniforms), [rows, 1]),
    seen: new Tensor('bool', new Uint8Array(rows * VOCAB), [rows, VOCAB]),
  };
  const values: Record<keyof Sampling, number | boolean> = {
    invTemperature: 1 / input.temperature,
    greedy: false,
    filter: true,
    listSize: VOCAB,
    cheapSize,
    middleSize: Math.min(VOCAB, 2 * cheapSize),
    topP: input.topP,
    minP: 0,
    useMinP: false,
    penalty: 1,
    usePenalty: false,
    modelLogprobs: false,
  };
  Object.assign(feeds, samplingScalarFeeds(ort, values));
  const out = await sessions.get(method)!.run(feeds);
  return {
    tokens: Array.from(out.token!.data as BigInt64Array, Number),
    logprobs: Array.from(out.logprob!.data as Float32Array),
  };
}

/** Logits on a coarse grid (many ties) or spread out, a few rows per case. */
const caseArbitrary = fc.record({
  rows: fc.array(
    fc.oneof(
      fc.array(
        fc.integer({ min: -6, max: 6 }).map((value) => value / 2),
        { minLength: VOCAB, maxLength: VOCAB },
      ),
      fc.array(fc.float({ min: -8, max: 8, noNaN: true }), { minLength: VOCAB, maxLength: VOCAB }),
      fc.constant(new Array<number>(VOCAB).fill(0.25)),
    ),
    { minLength: 1, maxLength: 4 },
  ),
  uniforms: fc.array(fc.float({ min: 0, max: Math.fround(0.999), noNaN: true }), {
    minLength: 4,
    maxLength: 4,
  }),
  topP: fc.oneof(
    fc.constantFrom(0.5, 0.9, 0.95, 0.99),
    fc.float({ min: Math.fround(0.05), max: 1, noNaN: true }),
  ),
  temperature: fc.constantFrom(0.3, 0.8, 1, 2.5),
});

describe('exact top-p without a full sort (histogram search)', () => {
  it('should sample exactly the tokens and logprobs of the full-sort implementation (ties included)', async () => {
    await fc.assert(
      fc.asyncProperty(caseArbitrary, fc.constantFrom(1, 4, 16), async (input, cheapSize) => {
        const rows = { ...input, uniforms: input.uniforms.slice(0, input.rows.length) };
        const searched = await sample('search', rows, cheapSize);
        const sorted = await sample('sort', rows, cheapSize);
        expect(searched).toEqual(sorted);
      }),
      { seed: 13, numRuns: 150 },
    );
  });

  it('should keep the nucleus of the float64 reference on a wide vocabulary row', async () => {
    // a long nucleus (flat logits): the cheap tier never covers it, the search must
    const row = Array.from({ length: VOCAB }, (_, index) => Math.sin(index) * 2);
    for (const topP of [0.3, 0.9]) {
      const reference = processLogits(row, { topP, temperature: 0.8 });
      const uniforms = [0.01, 0.37, 0.72, 0.999];
      const { tokens, logprobs } = await sample(
        'search',
        { rows: uniforms.map(() => row), uniforms, topP, temperature: 0.8 },
        4,
      );
      tokens.forEach((token, index) => {
        const position = reference.tokenIds.indexOf(token);
        expect(position).toBeGreaterThanOrEqual(0);
        expect(Math.abs(reference.logprobs[position]! - logprobs[index]!)).toBeLessThan(1e-5);
      });
      expect(reference.tokenIds.length).toBeGreaterThan(16);
    }
  });
});
