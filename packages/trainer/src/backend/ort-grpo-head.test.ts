import { aggregationWeights, createRng, type KlEstimator, policyLoss } from '@rlvr/core';
import { OnnxDataType, valueInfo } from '@rlvr/model';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import {
  type GrpoHead,
  grpoLossWeights,
  grpoScalarInputs,
  grpoTokenInputs,
} from './ort-grpo-head.js';
import { StepNodes } from './ort-train-step-nodes.js';

const SPEC = {
  hidden_size: 8,
  num_hidden_layers: 1,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  intermediate_size: 8,
  vocab_size: 4,
};
const SETTINGS = {
  linearLayout: 'hf' as const,
  ropeTheta: 1e4,
  rmsNormEps: 1e-6,
  beta1: 0.9,
  beta2: 0.999,
  epsilon: 1e-8,
  maxGradNorm: 0,
};

/** A graph of the head alone: `logprobs` and the head's inputs → `weights` (−d loss / d logprob). */
async function headSession(head: GrpoHead) {
  const nodes = new StepNodes(SPEC, SETTINGS);
  nodes.g.add('Identity', [grpoLossWeights(nodes, 'logprobs', head)], {}, ['weights']);
  const { FLOAT } = OnnxDataType;
  const model = nodes.g.encode({
    irVersion: 8,
    opset: 17,
    producerName: 'test',
    graph: {
      name: 'grpo_head',
      input: [
        // the node helpers read the batch shape from `cos` (unused by the head)
        valueInfo('cos', FLOAT, [1, 1, 1, 4]),
        valueInfo('logprobs', FLOAT, ['N']),
        ...grpoTokenInputs(head).map((name) => valueInfo(name, FLOAT, ['N'])),
        ...grpoScalarInputs(head).map((name) => valueInfo(name, FLOAT, [])),
      ],
      output: [valueInfo('weights', FLOAT)],
    },
  });
  return ort.InferenceSession.create(model);
}

const ROWS = 3;
const LENGTH = 16;
const f32 = (values: number[]) => values.map((value) => Math.fround(value));

/** Logprobs and π_old / reference offsets wide enough to hit every clip, cap and clamp. */
function data(seed: number) {
  const rng = createRng(seed);
  const row = (f: (i: number) => number) => Array.from({ length: LENGTH }, (_, i) => f(i));
  const logprobs = Array.from({ length: ROWS }, () => f32(row(() => -0.1 - 3 * rng.next())));
  // log-ratios from −1.6 to +1.6 (ratios 0.2 … 5: both clips, δ 1.4 and dual clip 3), and ±25
  // (the ±20 clamp); reference offsets to ±12 and ±24 (k3's value cap and its ±20 clamp)
  const logRatio = (i: number) => (i === 0 ? 25 : i === 1 ? -25 : 3.2 * rng.next() - 1.6);
  const refOffset = (i: number) => (i === 2 ? 24 : i === 3 ? -24 : 24 * rng.next() - 12);
  const old = logprobs.map((values) => f32(values.map((lp, i) => lp - logRatio(i))));
  const ref = logprobs.map((values) => f32(values.map((lp, i) => lp + refOffset(i))));
  const mask = logprobs.map((_, r) => row((i) => (r === 1 && i > 11 ? 0 : 1)));
  const importance = logprobs.map(() => f32(row(() => 0.5 + rng.next())));
  return { logprobs, old, ref, mask, importance, advantages: [1.3, -0.9, -2.1] };
}

type Case = {
  name: string;
  kl?: KlEstimator;
  dual?: boolean;
  delta?: boolean;
  importance?: boolean;
  onPolicy?: boolean;
};

const CASES: Case[] = [
  { name: 'clip only' },
  {
    name: 'k3 KL, dual clip, δ cap, importance weights',
    kl: 'k3',
    dual: true,
    delta: true,
    importance: true,
  },
  { name: 'k1 KL, dual clip', kl: 'k1', dual: true },
  { name: 'k2 KL, δ cap', kl: 'k2', delta: true },
  { name: 'abs KL, importance weights', kl: 'abs', importance: true },
  { name: 'on-policy (ratio 1), k3 KL', kl: 'k3', onPolicy: true, dual: true },
];

describe("the train-step graph's GRPO head", () => {
  for (const c of CASES) {
    it(`gives core policyLoss's d loss / d logprob (${c.name})`, async () => {
      const d = data(c.name.length);
      const head: GrpoHead = {
        onPolicy: c.onPolicy === true,
        ...(c.kl ? { kl: c.kl } : {}),
        dualClip: c.dual === true,
        delta: c.delta === true,
        importance: c.importance === true,
      };
      const settings = { epsilonLow: 0.2, epsilonHigh: 0.28, dualClip: 3, delta: 1.4, beta: 0.1 };
      const expected = policyLoss({
        logprobs: d.logprobs,
        oldLogprobs: c.onPolicy ? d.logprobs : d.old,
        advantages: d.advantages,
        mask: d.mask,
        epsilonLow: settings.epsilonLow,
        epsilonHigh: settings.epsilonHigh,
        ...(c.dual ? { dualClip: settings.dualClip } : {}),
        ...(c.delta ? { delta: settings.delta } : {}),
        ...(c.kl ? { refLogprobs: d.ref, klCoefficient: settings.beta, klEstimator: c.kl } : {}),
        ...(c.importance ? { importanceWeights: d.importance } : {}),
        aggregation: 'token-mean',
      });
      if (!c.onPolicy) {
        // the data reach both clips (and, where configured, the cap and the dual clip)
        expect(expected.metrics.clipRatioLow).toBeGreaterThan(0);
        expect(expected.metrics.clipRatioHigh).toBeGreaterThan(0);
        // (with the δ cap below c the dual clip cannot bind)
        if (c.dual && !c.delta) expect(expected.metrics.dualClipFraction).toBeGreaterThan(0);
      }
      const flat = (rows: number[][]) => Float32Array.from(rows.flat());
      const tokens: Record<string, Float32Array> = {
        advantages: flat(d.mask.map((row, r) => row.map(() => d.advantages[r]!))),
        agg_weights: flat(aggregationWeights(d.mask, 'token-mean')),
        old_logprobs: flat(d.old),
        ref_logprobs: flat(d.ref),
        importance_weights: flat(d.importance),
      };
      const scalars: Record<string, number> = {
        eps_low: settings.epsilonLow,
        eps_high: settings.epsilonHigh,
        beta: settings.beta,
        dual_clip: settings.dualClip,
        delta: settings.delta,
      };
      const n = ROWS * LENGTH;
      const feeds: Record<string, ort.Tensor> = {
        cos: new ort.Tensor('float32', new Float32Array(4), [1, 1, 1, 4]),
        logprobs: new ort.Tensor('float32', flat(d.logprobs), [n]),
      };
      for (const name of grpoTokenInputs(head)) {
        feeds[name] = new ort.Tensor('float32', tokens[name]!, [n]);
      }
      for (const name of grpoScalarInputs(head)) {
        feeds[name] = new ort.Tensor('float32', Float32Array.of(scalars[name]!), []);
      }
      const session = await headSession(head);
      const weights = (await session.run(feeds)).weights!.data as Float32Array;
      await session.release();
      const want = expected.gradLogprobs.flat();
      let nonZero = 0;
      want.forEach((gradient, index) => {
        expect(Math.abs(weights[index]! + gradient), `token ${index}`).toBeLessThan(
          1e-6 + 1e-5 * Math.abs(gradient),
        );
        if (gradient !== 0) nonZero += 1;
      });
      expect(nonZero).toBeGreaterThan(n / 4);
    });
  }
});
