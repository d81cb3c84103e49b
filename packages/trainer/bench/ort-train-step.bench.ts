/**
 * Prototype of issue #14's route 2b: one onnxruntime graph per train step — forward, token-mean
 * cross-entropy, the hand-written backward pass (the same math as `src/model/llama-backward.ts`),
 * global-norm clipping and AdamW — for the trainer bench's Llama configs and batch (16 × 128, the
 * 0.8M and 5M configs, lr 1e-4 constant, `maxGradNorm` 1, PyTorch's AdamW defaults). Weights and
 * Adam moments are graph inputs; the step returns their new values, which feed the next step.
 *
 * It first checks parity: 3 steps from the same random checkpoint on the same batch against the
 * trainer's own `sftStep` (tfjs, what `selectBackend()` picks), losses side by side; then it
 * times both (and the PyTorch peer when `python3-torch` is installed), alternating,
 * `BENCH_ROUNDS` rounds × `BENCH_STEPS` steps, medians. Not wired into the trainer: a bench.
 *
 * Run: `npx tsx bench/ort-train-step.bench.ts` (from packages/trainer). Env: BENCH_ROUNDS (3),
 * BENCH_STEPS (3), ORT_THREADS (2), CONFIGS (`0.8M,5M`).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createRng } from '@rlvr/core';
import {
  createRandomCheckpoint,
  GraphBuilder,
  OnnxDataType,
  parseLlamaConfig,
  valueInfo,
} from '@rlvr/model';
import * as ort from 'onnxruntime-node';
import {
  createLlamaModel,
  createPolicyTrainer,
  selectBackend,
  type TokenSequence,
} from '../src/index.js';
import { BENCH_CONFIGS, type BenchConfig } from './configs.js';

const BATCH = 16;
const SEQ = 128;
const LR = 1e-4;
const BETA1 = 0.9;
const BETA2 = 0.999;
const EPS = 1e-8;
const MAX_NORM = 1;
const STEPS = Number(process.env.BENCH_STEPS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const THREADS = Number(process.env.ORT_THREADS ?? 2);
const CHOSEN = (process.env.CONFIGS ?? '0.8M,5M').split(',');

type Param = { name: string; shape: number[] };

/** The train-step graph of one config; inputs `ids`, `labels` `[N]`, `c1`, `c2`, every param and its `m`, `v`. */
function trainStepGraph(
  spec: BenchConfig,
  theta: number,
  rmsEps: number,
): { model: Uint8Array; params: Param[] } {
  const g = new GraphBuilder();
  const d = spec.hidden_size;
  const heads = spec.num_attention_heads;
  const kvHeads = spec.num_key_value_heads;
  const hd = d / heads;
  const group = heads / kvHeads;
  const ffn = spec.intermediate_size;
  const vocab = spec.vocab_size;
  const n = BATCH * SEQ;
  const params: Param[] = [];
  const param = (name: string, shape: number[]) => {
    params.push({ name, shape });
    return name;
  };
  const reshape = (x: string, shape: number[]) => g.op('Reshape', [x, g.int64(shape)]);
  const transpose = (x: string, perm: number[]) => g.op('Transpose', [x], { perm });
  const mul = (a: string, b: string) => g.op('Mul', [a, b]);
  const add = (a: string, b: string) => g.op('Add', [a, b]);
  const sub = (a: string, b: string) => g.op('Sub', [a, b]);
  /** x · Wᵀ (HF layout W `[out, in]`). */
  const linear = (x: string, w: string) => g.op('Gemm', [x, w], { transB: 1 });
  /** dYᵀ · X: the weight gradient `[out, in]`. */
  const weightGrad = (dy: string, x: string) => g.op('Gemm', [dy, x], { transA: 1 });
  const axisLast = g.int64([-1]);

  // RoPE tables [1, T, 1, hd] (HF: angles repeated over both halves) and the causal mask.
  const inverse = Array.from({ length: hd / 2 }, (_, i) => 1 / theta ** ((2 * i) / hd));
  const cos: number[] = [];
  const sin: number[] = [];
  for (let t = 0; t < SEQ; t++) {
    for (let j = 0; j < hd; j++) {
      const angle = t * inverse[j % (hd / 2)]!;
      cos.push(Math.cos(angle));
      sin.push(Math.sin(angle));
    }
  }
  const cosT = g.float(cos, [1, SEQ, 1, hd]);
  const sinT = g.float(sin, [1, SEQ, 1, hd]);
  const mask: number[] = [];
  for (let i = 0; i < SEQ; i++) for (let j = 0; j < SEQ; j++) mask.push(j <= i ? 0 : -1e9);
  const bias = g.float(mask, [1, 1, 1, SEQ * SEQ]);
  const scale = g.float([1 / Math.sqrt(hd)]);

  const halves = (x: string): [string, string] => {
    const [a, b] = g.add('Split', [x, g.int64([hd / 2, hd / 2])], { axis: 3 }, 2);
    return [a!, b!];
  };
  const rope = (x: string) => {
    const [a, b] = halves(x);
    return add(mul(x, cosT), mul(g.op('Concat', [g.op('Neg', [b]), a], { axis: 3 }), sinT));
  };
  const ropeAdjoint = (x: string) => {
    const [a, b] = halves(mul(x, sinT));
    return add(mul(x, cosT), g.op('Concat', [b, g.op('Neg', [a])], { axis: 3 }));
  };
  /** `[N, H·hd]` queries → `[B, Hkv, g·T, hd]`. */
  const queryHeads = (q: string) =>
    reshape(transpose(reshape(q, [BATCH, SEQ, kvHeads, group, hd]), [0, 2, 3, 1, 4]), [
      BATCH,
      kvHeads,
      group * SEQ,
      hd,
    ]);
  const queryTokens = (x: string) =>
    reshape(transpose(reshape(x, [BATCH, kvHeads, group, SEQ, hd]), [0, 3, 1, 2, 4]), [
      n,
      heads * hd,
    ]);
  const kvHeadsOf = (x: string) => transpose(x, [0, 2, 1, 3]); // [B, T, Hkv, hd] → [B, Hkv, T, hd]
  const kvTokens = (x: string) => reshape(transpose(x, [0, 2, 1, 3]), [n, kvHeads * hd]);
  const lastTwo = [0, 1, 3, 2];

  const rmsNorm = (x: string, w: string) => {
    const ms = g.op('ReduceMean', [mul(x, x)], { axes: [-1], keepdims: 1 });
    const r = g.op('Reciprocal', [g.op('Sqrt', [add(ms, g.float([rmsEps]))])]);
    const xhat = mul(x, r);
    return { h: mul(xhat, w), xhat, r, w };
  };
  const rmsBackward = (norm: ReturnType<typeof rmsNorm>, dh: string) => {
    const dw = g.op('ReduceSum', [mul(dh, norm.xhat), g.int64([0])], { keepdims: 0 });
    const dxhat = mul(dh, norm.w);
    const dot = g.op('ReduceMean', [mul(dxhat, norm.xhat)], { axes: [-1], keepdims: 1 });
    return { dx: mul(norm.r, sub(dxhat, mul(norm.xhat, dot))), dw };
  };

  const grads = new Map<string, string>();
  const embed = param('model.embed_tokens.weight', [vocab, d]);
  let x = g.op('Gather', [embed, 'ids'], { axis: 0 }); // [N, d]
  const caches: {
    prefix: string;
    x: string;
    norm1: ReturnType<typeof rmsNorm>;
    norm2: ReturnType<typeof rmsNorm>;
    q: string;
    k: string;
    v: string;
    p: string;
    o: string;
    gate: string;
    up: string;
    sig: string;
    silu: string;
    act: string;
  }[] = [];
  for (let layer = 0; layer < spec.num_hidden_layers; layer++) {
    const prefix = `model.layers.${layer}`;
    const w = (suffix: string, shape: number[]) => param(`${prefix}.${suffix}.weight`, shape);
    const ln1 = w('input_layernorm', [d]);
    const wq = w('self_attn.q_proj', [heads * hd, d]);
    const wk = w('self_attn.k_proj', [kvHeads * hd, d]);
    const wv = w('self_attn.v_proj', [kvHeads * hd, d]);
    const wo = w('self_attn.o_proj', [d, heads * hd]);
    const ln2 = w('post_attention_layernorm', [d]);
    const wg = w('mlp.gate_proj', [ffn, d]);
    const wu = w('mlp.up_proj', [ffn, d]);
    const wd = w('mlp.down_proj', [d, ffn]);
    const norm1 = rmsNorm(x, ln1);
    const q = queryHeads(mul(rope(reshape(linear(norm1.h, wq), [BATCH, SEQ, heads, hd])), scale)); // roped, scaled
    const k = kvHeadsOf(rope(reshape(linear(norm1.h, wk), [BATCH, SEQ, kvHeads, hd])));
    const v = kvHeadsOf(reshape(linear(norm1.h, wv), [BATCH, SEQ, kvHeads, hd]));
    const scores = g.op('MatMul', [q, transpose(k, lastTwo)]); // [B, Hkv, gT, T]
    const masked = add(reshape(scores, [BATCH, kvHeads, group, SEQ * SEQ]), bias);
    const p = g.op('Softmax', [reshape(masked, [BATCH, kvHeads, group * SEQ, SEQ])], { axis: -1 });
    const o = queryTokens(g.op('MatMul', [p, v])); // [N, H·hd]
    const x2 = add(x, linear(o, wo));
    const norm2 = rmsNorm(x2, ln2);
    const gate = linear(norm2.h, wg);
    const up = linear(norm2.h, wu);
    const sig = g.op('Sigmoid', [gate]);
    const silu = mul(gate, sig);
    const act = mul(silu, up);
    caches.push({ prefix, x, norm1, norm2, q, k, v, p, o, gate, up, sig, silu, act });
    x = add(x2, linear(act, wd));
  }
  const lnF = param('model.norm.weight', [d]);
  const normF = rmsNorm(x, lnF);
  const head = param('lm_head.weight', [vocab, d]);
  const logits = linear(normF.h, head); // [N, V]
  const logp = g.op('LogSoftmax', [logits], { axis: -1 });
  const labels2 = g.op('Unsqueeze', ['labels', g.int64([1])]);
  const picked = g.op('GatherElements', [logp, labels2], { axis: 1 });
  const loss = g.op('Neg', [g.op('ReduceMean', [picked], { keepdims: 0 })]);

  // backward: dlogits = (softmax − onehot) / N
  const oneHot = (indices: string, depth: number) =>
    g.op('OneHot', [indices, g.int64([depth], []), g.float([0, 1], [2])], { axis: -1 });
  const dLogits = mul(sub(g.op('Exp', [logp]), oneHot('labels', vocab)), g.float([1 / n]));
  grads.set(head, weightGrad(dLogits, normF.h));
  const final = rmsBackward(normF, g.op('MatMul', [dLogits, head]));
  grads.set(lnF, final.dw);
  let dxs = final.dx;
  for (let layer = spec.num_hidden_layers - 1; layer >= 0; layer--) {
    const c = caches[layer]!;
    const name = (suffix: string) => `${c.prefix}.${suffix}.weight`;
    // MLP
    grads.set(name('mlp.down_proj'), weightGrad(dxs, c.act));
    const dAct = g.op('MatMul', [dxs, name('mlp.down_proj')]);
    const dSilu = mul(dAct, c.up);
    const dUp = mul(dAct, c.silu);
    const one = g.float([1]);
    const dGate = mul(mul(dSilu, c.sig), add(one, mul(c.gate, sub(one, c.sig))));
    grads.set(name('mlp.gate_proj'), weightGrad(dGate, c.norm2.h));
    grads.set(name('mlp.up_proj'), weightGrad(dUp, c.norm2.h));
    const dh2 = add(
      g.op('MatMul', [dGate, name('mlp.gate_proj')]),
      g.op('MatMul', [dUp, name('mlp.up_proj')]),
    );
    const n2 = rmsBackward(c.norm2, dh2);
    grads.set(name('post_attention_layernorm'), n2.dw);
    const dx2 = add(dxs, n2.dx);
    // attention
    grads.set(name('self_attn.o_proj'), weightGrad(dx2, c.o));
    const dO = queryHeads(g.op('MatMul', [dx2, name('self_attn.o_proj')])); // [B, Hkv, gT, hd]
    const dP = g.op('MatMul', [dO, transpose(c.v, lastTwo)]);
    const dV = g.op('MatMul', [transpose(c.p, lastTwo), dO]); // [B, Hkv, T, hd]
    const rowDot = g.op('ReduceSum', [mul(dP, c.p), axisLast], { keepdims: 1 });
    const dS = mul(c.p, sub(dP, rowDot));
    const dQ = mul(queryTokens(g.op('MatMul', [dS, c.k])), scale); // [N, H·hd], roped space
    const dK = g.op('MatMul', [transpose(dS, lastTwo), c.q]); // [B, Hkv, T, hd]
    const dq = reshape(ropeAdjoint(reshape(dQ, [BATCH, SEQ, heads, hd])), [n, heads * hd]);
    const dk = reshape(ropeAdjoint(reshape(kvTokens(dK), [BATCH, SEQ, kvHeads, hd])), [
      n,
      kvHeads * hd,
    ]);
    const dv = kvTokens(dV);
    grads.set(name('self_attn.q_proj'), weightGrad(dq, c.norm1.h));
    grads.set(name('self_attn.k_proj'), weightGrad(dk, c.norm1.h));
    grads.set(name('self_attn.v_proj'), weightGrad(dv, c.norm1.h));
    const dh1 = add(
      add(
        g.op('MatMul', [dq, name('self_attn.q_proj')]),
        g.op('MatMul', [dk, name('self_attn.k_proj')]),
      ),
      g.op('MatMul', [dv, name('self_attn.v_proj')]),
    );
    const n1 = rmsBackward(c.norm1, dh1);
    grads.set(name('input_layernorm'), n1.dw);
    dxs = add(dx2, n1.dx);
  }
  const ids2 = g.op('Unsqueeze', ['ids', g.int64([1])]);
  grads.set(
    embed,
    g.op('ScatterND', [g.op('ConstantOfShape', [g.int64([vocab, d])]), ids2, dxs], {
      reduction: 'add',
    }),
  );

  // global-norm clipping (PyTorch's: max_norm / (norm + 1e-6) when the norm exceeds it), AdamW
  const squares = params.map((p) => g.op('ReduceSumSquare', [grads.get(p.name)!], { keepdims: 0 }));
  const total = g.op('Sqrt', [g.op('Sum', squares)]);
  const clip = g.op('Min', [
    g.float([1], []),
    g.op('Div', [g.float([MAX_NORM], []), add(total, g.float([1e-6], []))]),
  ]);
  const outputs: string[] = [loss, total];
  for (const p of params) {
    const grad = mul(grads.get(p.name)!, clip);
    const m = add(mul(`${p.name}.m`, g.float([BETA1], [])), mul(grad, g.float([1 - BETA1], [])));
    const v = add(
      mul(`${p.name}.v`, g.float([BETA2], [])),
      mul(mul(grad, grad), g.float([1 - BETA2], [])),
    );
    const denominator = add(g.op('Sqrt', [mul(v, 'c2')]), g.float([EPS], []));
    const updated = sub(p.name, g.op('Div', [mul(m, 'c1'), denominator]));
    outputs.push(updated, m, v);
  }
  const outNames = [
    'loss',
    'grad_norm',
    ...params.flatMap((p) => [`${p.name}.new`, `${p.name}.m.new`, `${p.name}.v.new`]),
  ];
  outputs.forEach((value, index) => {
    g.add('Identity', [value], {}, [outNames[index]!]);
  });
  const model = g.encode({
    irVersion: 8,
    opset: 17,
    producerName: 'rlvr-train-step-prototype',
    graph: {
      name: 'train_step',
      input: [
        valueInfo('ids', OnnxDataType.INT64, [n]),
        valueInfo('labels', OnnxDataType.INT64, [n]),
        valueInfo('c1', OnnxDataType.FLOAT, []),
        valueInfo('c2', OnnxDataType.FLOAT, []),
        ...params.flatMap((p) => [
          valueInfo(p.name, OnnxDataType.FLOAT, p.shape),
          valueInfo(`${p.name}.m`, OnnxDataType.FLOAT, p.shape),
          valueInfo(`${p.name}.v`, OnnxDataType.FLOAT, p.shape),
        ]),
      ],
      output: outNames.map((name) => valueInfo(name, OnnxDataType.FLOAT)),
    },
  });
  return { model, params };
}

function batch(seed: number, vocab: number): TokenSequence[] {
  const rng = createRng(seed);
  return Array.from({ length: BATCH }, () => ({
    promptIds: [Math.floor(rng.next() * vocab)],
    completionIds: Array.from({ length: SEQ }, () => Math.floor(rng.next() * vocab)),
  }));
}

/** The ORT trainer: weights and moments as tensors fed back each step. */
async function ortTrainer(
  spec: BenchConfig,
  tensors: Map<string, Float32Array>,
  config: { rope_theta: number; rms_norm_eps: number },
) {
  const { model, params } = trainStepGraph(spec, config.rope_theta, config.rms_norm_eps);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: THREADS,
    graphOptimizationLevel: 'all',
  });
  const state: Record<string, ort.Tensor> = {};
  for (const p of params) {
    const data = tensors.get(p.name);
    if (data === undefined) throw new Error(`no tensor ${p.name}`);
    state[p.name] = new ort.Tensor('float32', Float32Array.from(data), p.shape);
    state[`${p.name}.m`] = new ort.Tensor('float32', new Float32Array(data.length), p.shape);
    state[`${p.name}.v`] = new ort.Tensor('float32', new Float32Array(data.length), p.shape);
  }
  let t = 0;
  return {
    async step(sequences: TokenSequence[]): Promise<number> {
      t += 1;
      const ids = new BigInt64Array(BATCH * SEQ);
      const labels = new BigInt64Array(BATCH * SEQ);
      sequences.forEach((sequence, row) => {
        const all = [...sequence.promptIds, ...sequence.completionIds];
        for (let i = 0; i < SEQ; i++) {
          ids[row * SEQ + i] = BigInt(all[i]!);
          labels[row * SEQ + i] = BigInt(all[i + 1]!);
        }
      });
      const feeds: Record<string, ort.Tensor> = {
        ...state,
        ids: new ort.Tensor('int64', ids, [BATCH * SEQ]),
        labels: new ort.Tensor('int64', labels, [BATCH * SEQ]),
        c1: new ort.Tensor('float32', Float32Array.of(LR / (1 - BETA1 ** t)), []),
        c2: new ort.Tensor('float32', Float32Array.of(1 / (1 - BETA2 ** t)), []),
      };
      const out = await session.run(feeds);
      for (const p of params) {
        state[p.name] = out[`${p.name}.new`]!;
        state[`${p.name}.m`] = out[`${p.name}.m.new`]!;
        state[`${p.name}.v`] = out[`${p.name}.v.new`]!;
      }
      return (out.loss!.data as Float32Array)[0]!;
    },
    release: () => session.release(),
  };
}

const OPENBLAS = '/usr/lib/x86_64-linux-gnu/openblas-openmp';
function torchRound(spec: BenchConfig): number | undefined {
  try {
    execFileSync('/usr/bin/python3', ['-c', 'import torch'], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  const script = fileURLToPath(new URL('./torch-llama.py', import.meta.url));
  const env = {
    ...process.env,
    OMP_NUM_THREADS: String(THREADS),
    ...(existsSync(OPENBLAS) ? { LD_LIBRARY_PATH: OPENBLAS } : {}),
  };
  const args = [
    spec.hidden_size,
    spec.num_hidden_layers,
    spec.num_attention_heads,
    spec.intermediate_size,
    spec.vocab_size,
    BATCH,
    SEQ,
    STEPS,
    THREADS,
    spec.num_key_value_heads,
  ];
  const out = execFileSync('/usr/bin/python3', [script, ...args.map(String)], {
    env,
    encoding: 'utf8',
  });
  return (JSON.parse(out.trim().split('\n').at(-1)!) as { tokensPerSecond: number })
    .tokensPerSecond;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const selected = await selectBackend();
console.log(
  `tfjs trainer: ${selected.name}, matMul ${selected.matMul}; onnxruntime ${THREADS} threads`,
);
for (const name of CHOSEN) {
  const spec = BENCH_CONFIGS[name]!;
  const config = parseLlamaConfig({ ...spec, max_position_embeddings: 256 });
  const checkpoint = createRandomCheckpoint(config, { seed: 1 });
  const tensors = new Map(checkpoint.tensors.map((t) => [t.name, t.data]));
  const sequences = batch(2, spec.vocab_size);
  const model = await createLlamaModel(checkpoint);
  const trainer = await createPolicyTrainer(model, { schedule: { learningRate: LR } });
  const onnx = await ortTrainer(spec, tensors, config);
  const ours: number[] = [];
  const theirs: number[] = [];
  for (let step = 0; step < 3; step++) {
    theirs.push(trainer.sftStep(sequences).loss);
    ours.push(await onnx.step(sequences));
  }
  const worst = Math.max(...ours.map((loss, i) => Math.abs(loss - theirs[i]!)));
  console.log(
    `${name} parity, 3 steps on one batch: loss tfjs ${theirs.map((l) => l.toFixed(6)).join(' → ')}, onnx graph ${ours.map((l) => l.toFixed(6)).join(' → ')} (max |Δ| ${worst.toExponential(2)})`,
  );
  const tokens = BATCH * SEQ * STEPS;
  const rates: Record<string, number[]> = { tfjs: [], graph: [], torch: [] };
  for (let round = 0; round < ROUNDS; round++) {
    let start = performance.now();
    for (let step = 0; step < STEPS; step++) trainer.sftStep(sequences);
    rates.tfjs!.push(tokens / ((performance.now() - start) / 1000));
    start = performance.now();
    for (let step = 0; step < STEPS; step++) await onnx.step(sequences);
    rates.graph!.push(tokens / ((performance.now() - start) / 1000));
    const peer = torchRound(spec);
    if (peer !== undefined) rates.torch!.push(peer);
  }
  const torch = rates.torch!.length > 0 ? median(rates.torch!) : undefined;
  const line = (label: string, rate: number) =>
    `  ${label}: ${Math.round(rate)} tok/s${torch === undefined ? '' : ` (${(rate / torch).toFixed(2)}× PyTorch)`}`;
  console.log(`${name}, ${BATCH}×${SEQ}, medians of ${ROUNDS} rounds × ${STEPS} steps:`);
  console.log(line('@rlvr/trainer sftStep (tfjs)', median(rates.tfjs!)));
  console.log(line('one onnxruntime train-step graph (prototype)', median(rates.graph!)));
  if (torch !== undefined)
    console.log(`  PyTorch 1.13 + OpenBLAS, ${THREADS} threads: ${Math.round(torch)} tok/s`);
  await onnx.release();
  trainer.dispose();
  model.dispose();
}
