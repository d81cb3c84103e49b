import {
  aggregationWeights,
  createRng,
  type KlEstimator,
  type LossMode,
  type PolicyLossInput,
  policyLoss,
} from '@rlvr/core';
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
  // behaviour − current: sequence means 0.9 (A > 0: kept), 0.1 over the unmasked tokens of
  // sequence 1 (kept; its masked tokens at +5 would push the mean to 1.3 if they counted) and
  // 0.9 (A < 0: dropped), each ±0.3 around the mean, far from δ = 0.5
  const noise = row((i) => 0.3 * (i % 2 === 0 ? 1 : -1));
  const behaviourOffset = [0.9, 0.1, 0.9];
  const behaviour = logprobs.map((values, r) =>
    f32(values.map((lp, i) => lp + (r === 1 && i > 11 ? 5 : behaviourOffset[r]! + noise[i]!))),
  );
  const selection = logprobs.map(() => row(() => (rng.next() < 0.4 ? 0 : 1)));
  return {
    logprobs,
    old,
    ref,
    mask,
    importance,
    behaviour,
    selection,
    advantages: [1.3, -0.9, -2.1],
  };
}

type Case = {
  name: string;
  kl?: KlEstimator;
  dual?: boolean;
  delta?: boolean;
  importance?: boolean;
  onPolicy?: boolean;
  lossMode?: LossMode;
  biasKl?: boolean;
  offPolicy?: boolean;
  selection?: boolean;
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
  // issue #33: the 2025–26 variants
  { name: 'cispo', lossMode: 'cispo' },
  { name: 'cispo, k3 KL, importance weights', lossMode: 'cispo', kl: 'k3', importance: true },
  { name: 'sapo', lossMode: 'sapo' },
  { name: 'sapo, k2 KL, importance weights', lossMode: 'sapo', kl: 'k2', importance: true },
  { name: 'bias-corrected k3 KL', kl: 'k3', biasKl: true },
  { name: 'bias-corrected k1 KL, sapo', kl: 'k1', biasKl: true, lossMode: 'sapo' },
  { name: 'bias-corrected k3 KL on-policy', kl: 'k3', biasKl: true, onPolicy: true },
  { name: 'off-policy sequence mask', offPolicy: true },
  { name: 'off-policy mask on-policy, k3 KL', offPolicy: true, onPolicy: true, kl: 'k3' },
  { name: 'high-entropy selection', selection: true },
  {
    name: 'everything: cispo, bias-corrected k3, importance, off-policy mask, selection',
    lossMode: 'cispo',
    kl: 'k3',
    biasKl: true,
    importance: true,
    offPolicy: true,
    selection: true,
  },
  {
    name: 'everything with clip: δ, dual clip, bias-corrected abs KL, off-policy mask, selection',
    kl: 'abs',
    biasKl: true,
    dual: true,
    delta: true,
    offPolicy: true,
    selection: true,
  },
];

const BASE_SCALARS: Record<string, number> = {
  eps_low: 0.2,
  eps_high: 0.28,
  beta: 0.1,
  dual_clip: 3,
  delta: 1.4,
  sapo_tau_pos: 1,
  sapo_tau_neg: 1.05,
  off_policy_threshold: 0.5,
};

function headOf(c: Case): GrpoHead {
  return {
    onPolicy: c.onPolicy === true,
    ...(c.kl ? { kl: c.kl } : {}),
    dualClip: c.dual === true,
    delta: c.delta === true,
    importance: c.importance === true,
    ...(c.lossMode ? { lossMode: c.lossMode } : {}),
    ...(c.biasKl ? { biasCorrectedKl: true } : {}),
    ...(c.offPolicy ? { offPolicyMask: true } : {}),
    ...(c.selection ? { entropyMask: true } : {}),
  };
}

/** core's `policyLoss` input for a case (token mean over the masked batch). */
function coreInput(
  c: Case,
  d: ReturnType<typeof data>,
  s: Record<string, number>,
): PolicyLossInput {
  const mode = c.lossMode ?? 'clip';
  return {
    logprobs: d.logprobs,
    oldLogprobs: c.onPolicy ? d.logprobs : d.old,
    advantages: d.advantages,
    mask: d.mask,
    lossMode: mode,
    ...(mode === 'sapo'
      ? { sapoTemperaturePos: s.sapo_tau_pos!, sapoTemperatureNeg: s.sapo_tau_neg! }
      : { epsilonLow: s.eps_low!, epsilonHigh: s.eps_high! }),
    ...(c.dual ? { dualClip: s.dual_clip! } : {}),
    ...(c.delta ? { delta: s.delta! } : {}),
    ...(c.kl ? { refLogprobs: d.ref, klCoefficient: s.beta!, klEstimator: c.kl } : {}),
    ...(c.biasKl ? { useBiasCorrectionKl: true } : {}),
    ...(c.importance ? { importanceWeights: d.importance } : {}),
    ...(c.offPolicy
      ? { offPolicyMaskThreshold: s.off_policy_threshold!, behaviourLogprobs: d.behaviour }
      : {}),
    ...(c.selection ? { entropyMask: d.selection } : {}),
    aggregation: 'token-mean',
  };
}

/** The head's weights for a case, with `scalars` (and `tokens` overrides) as its inputs. */
async function headWeights(
  c: Case,
  d: ReturnType<typeof data>,
  scalars: Record<string, number>,
  overrides: Record<string, number[][]> = {},
): Promise<Float32Array> {
  const head = headOf(c);
  const flat = (rows: number[][]) => Float32Array.from(rows.flat());
  const tokens: Record<string, number[][]> = {
    advantages: d.mask.map((row, r) => row.map(() => d.advantages[r]!)),
    agg_weights: aggregationWeights(d.mask, 'token-mean'),
    old_logprobs: d.old,
    ref_logprobs: d.ref,
    importance_weights: d.importance,
    behaviour_logprobs: d.behaviour,
    sequence_ids: d.mask.map((row, r) => row.map(() => r)),
    loss_mask: d.mask,
    entropy_mask: d.selection,
    ...overrides,
  };
  const n = ROWS * LENGTH;
  const feeds: Record<string, ort.Tensor> = {
    cos: new ort.Tensor('float32', new Float32Array(4), [1, 1, 1, 4]),
    logprobs: new ort.Tensor('float32', flat(d.logprobs), [n]),
  };
  for (const name of grpoTokenInputs(head)) {
    feeds[name] = new ort.Tensor('float32', flat(tokens[name]!), [n]);
  }
  for (const name of grpoScalarInputs(head)) {
    feeds[name] = new ort.Tensor('float32', Float32Array.of(scalars[name]!), []);
  }
  const session = await headSession(head);
  const weights = (await session.run(feeds)).weights!.data as Float32Array;
  await session.release();
  return weights;
}

/** Indices where the head's weights are not −core's gradient within the head's tolerance. */
function mismatches(weights: Float32Array, gradients: number[]): number[] {
  return gradients.flatMap((gradient, index) =>
    Math.abs(weights[index]! + gradient) < 1e-6 + 1e-5 * Math.abs(gradient) ? [] : [index],
  );
}

describe("the train-step graph's GRPO head", () => {
  for (const c of CASES) {
    it(`gives core policyLoss's d loss / d logprob (${c.name})`, async () => {
      const d = data(c.name.length);
      const expected = policyLoss(coreInput(c, d, BASE_SCALARS));
      const mode = c.lossMode ?? 'clip';
      if (!c.onPolicy && mode !== 'sapo') {
        // the data reach both clips (and, where configured, the cap and the dual clip)
        expect(expected.metrics.clipRatioLow).toBeGreaterThan(0);
        expect(expected.metrics.clipRatioHigh).toBeGreaterThan(0);
        // (with the δ cap below c the dual clip cannot bind)
        if (c.dual && !c.delta) expect(expected.metrics.dualClipFraction).toBeGreaterThan(0);
      }
      // the off-policy mask drops sequence 2 only (0 of sequence 1's, thanks to its loss mask)
      if (c.offPolicy) expect(expected.metrics.offPolicyMaskedFraction).toBeCloseTo(16 / 44, 12);
      const weights = await headWeights(c, d, BASE_SCALARS);
      const want = expected.gradLogprobs.flat();
      const off = mismatches(weights, want).map((index) => ({
        index,
        head: weights[index],
        core: -want[index]!,
      }));
      expect(off).toEqual([]);
      // not a vacuous comparison (the masks zero a sequence, or ~40% of the tokens)
      const nonZero = want.filter((gradient) => gradient !== 0).length;
      expect(nonZero).toBeGreaterThan((ROWS * LENGTH) / (c.offPolicy || c.selection ? 8 : 4));
    });
  }

  it('distinguishes each variant from its neighbour (the data reach every branch)', () => {
    const d = data(7);
    const gradients = (c: Case) => policyLoss(coreInput(c, d, BASE_SCALARS)).gradLogprobs.flat();
    const differs = (a: Case, b: Case) => {
      const x = gradients(a);
      const y = gradients(b);
      return x.filter((value, index) => Math.abs(value - y[index]!) > 1e-6).length;
    };
    // CISPO gives the clipped tokens the gradient the clip takes away, SAPO reshapes every off-1 token
    expect(differs({ name: 'cispo', lossMode: 'cispo' }, { name: 'clip' })).toBeGreaterThan(8);
    expect(differs({ name: 'sapo', lossMode: 'sapo' }, { name: 'clip' })).toBeGreaterThan(20);
    expect(
      differs({ name: 'b', kl: 'k3', biasKl: true }, { name: 'k3', kl: 'k3' }),
    ).toBeGreaterThan(20);
    expect(differs({ name: 'o', offPolicy: true }, { name: 'clip' })).toBeGreaterThan(8);
    expect(differs({ name: 's', selection: true }, { name: 'clip' })).toBeGreaterThan(8);
  });

  it('fails the comparison when one setting of the head is off (mutation checks)', async () => {
    const d = data(11);
    const want = (c: Case) => policyLoss(coreInput(c, d, BASE_SCALARS)).gradLogprobs.flat();
    const wrong = async (c: Case, scalars: Record<string, number>, tokens = {}) =>
      mismatches(await headWeights(c, d, { ...BASE_SCALARS, ...scalars }, tokens), want(c)).length;
    const cispo: Case = { name: 'cispo', lossMode: 'cispo' };
    const sapo: Case = { name: 'sapo', lossMode: 'sapo' };
    const bias: Case = { name: 'bias', kl: 'k3', biasKl: true };
    const offPolicy: Case = { name: 'off-policy', offPolicy: true };
    const selection: Case = { name: 'selection', selection: true };
    expect(await wrong(cispo, {})).toBe(0);
    expect(await wrong(cispo, { eps_high: 0.28 * 1.01 })).toBeGreaterThan(0);
    expect(await wrong(sapo, {})).toBe(0);
    expect(await wrong(sapo, { sapo_tau_pos: 1.05, sapo_tau_neg: 1 })).toBeGreaterThan(0);
    expect(await wrong(bias, {})).toBe(0);
    expect(await wrong(bias, { beta: 0.101 })).toBeGreaterThan(0);
    expect(await wrong(offPolicy, {})).toBe(0);
    // δ past sequence 2's mean KL (0.9), or the loss mask ignored (sequence 1's +5 tokens count)
    expect(await wrong(offPolicy, { off_policy_threshold: 1 })).toBeGreaterThan(0);
    expect(
      await wrong(offPolicy, {}, { loss_mask: d.mask.map((row) => row.map(() => 1)) }),
    ).toBeGreaterThan(0);
    expect(await wrong(selection, {})).toBe(0);
    expect(
      await wrong(selection, {}, { entropy_mask: d.selection.map((row) => row.map((k) => 1 - k)) }),
    ).toBeGreaterThan(0);
  });
});
