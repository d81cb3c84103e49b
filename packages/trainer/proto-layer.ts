import { OnnxDataType, valueInfo } from '@rlvr/model';
import { layerBackward, layerForward, StepNodes } from './src/backend/ort-train-step-nodes.js';
import * as ortMod from 'onnxruntime-node';
const ort: any = (ortMod as any).default ?? ortMod;
const bm: any = await import('onnxruntime-node/dist/binding.js');
const { binding, initOrt } = bm.default ?? bm;
initOrt();
const shape = JSON.parse(process.argv[2] ?? '{"hidden_size":576,"num_hidden_layers":30,"num_attention_heads":9,"num_key_value_heads":3,"intermediate_size":1536,"vocab_size":49152}');
const B = Number(process.argv[3] ?? 4), T = Number(process.argv[4] ?? 128);
const settings = { linearLayout: 'hf' as const, ropeTheta: 10000, rmsNormEps: 1e-5, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, maxGradNorm: 1 };
function build(mode: 'fwd' | 'bwd') {
  const nodes = new StepNodes({ ...shape, num_hidden_layers: 1 }, settings);
  const { out, cache } = layerForward(nodes, 0, 'x');
  const outs: [string, string][] = [];
  if (mode === 'fwd') outs.push(['out', out]);
  else {
    const dx = layerBackward(nodes, cache, 'd_out');
    outs.push(['dx', dx]);
    for (const p of nodes.params) outs.push([`${p.name}.grad`, nodes.grads.get(p.name)!]);
  }
  for (const [name, v] of outs) nodes.g.add('Identity', [v], {}, [name]);
  const F = OnnxDataType.FLOAT; const hd = nodes.hd;
  const bytes = nodes.g.encode({ irVersion: 8, opset: 17, producerName: 'p', graph: { name: 'l', input: [
    valueInfo('x', F, ['N', nodes.d]), ...(mode === 'bwd' ? [valueInfo('d_out', F, ['N', nodes.d])] : []),
    valueInfo('cos', F, ['B', 'T', 1, hd]), valueInfo('sin', F, ['B', 'T', 1, hd]), valueInfo('bias', F, ['B', 1, 1, 'TT']),
    ...nodes.params.map((p) => valueInfo(p.name, F, p.shape))], output: outs.map(([n]) => valueInfo(n, F)) } });
  const s = new binding.InferenceSession();
  s.loadModel(bytes.buffer, bytes.byteOffset, bytes.byteLength, { intraOpNumThreads: 2, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential', ...(process.env.PROF ? { enableProfiling: true, profileFilePrefix: '/tmp/exp/prof-' + mode } : {}) });
  return { s, params: nodes.params, outs: outs.map(([n]) => n) };
}
const t0 = performance.now();
const fwd = build('fwd'), bwd = build('bwd');
console.log('build+load ms', (performance.now() - t0).toFixed(0));
const N = B * T, d = shape.hidden_size, hd = d / shape.num_attention_heads;
const rnd = (n: number, s = 0.02) => { const a = new Float32Array(n); for (let i = 0; i < n; i++) a[i] = (Math.random() - 0.5) * s; return a; };
const feedsBase: any = {};
for (const p of fwd.params) feedsBase[p.name] = new ort.Tensor('float32', p.name.endsWith('norm.weight') ? new Float32Array(p.shape[0]).fill(1) : rnd(p.shape.reduce((a: number, b: number) => a * b, 1)), p.shape);
const cos = new Float32Array(N * hd).fill(1), sin = new Float32Array(N * hd);
const bias = new Float32Array(B * T * T);
for (let b = 0; b < B; b++) for (let i = 0; i < T; i++) for (let j = 0; j < T; j++) bias[b * T * T + i * T + j] = j <= i ? 0 : -1e9;
feedsBase.cos = new ort.Tensor('float32', cos, [B, T, 1, hd]); feedsBase.sin = new ort.Tensor('float32', sin, [B, T, 1, hd]);
feedsBase.bias = new ort.Tensor('float32', bias, [B, 1, 1, T * T]);
const x = new ort.Tensor('float32', rnd(N * d, 2), [N, d]);
const dOut = new ort.Tensor('float32', rnd(N * d, 0.001), [N, d]);
const ff = (o: string[]) => Object.fromEntries(o.map((n) => [n, null]));
const tf: number[] = [], tb: number[] = [];
for (let r = 0; r < 5; r++) {
  let a = performance.now();
  fwd.s.run({ ...feedsBase, x }, ff(fwd.outs), {});
  let b = performance.now();
  bwd.s.run({ ...feedsBase, x, d_out: dOut }, ff(bwd.outs), {});
  let c = performance.now();
  tf.push(b - a); tb.push(c - b);
}
const med = (v: number[]) => v.sort((p, q) => p - q)[v.length >> 1]!;
const ffn = shape.intermediate_size, kv = shape.num_key_value_heads * hd;
const linear = 2 * N * (d * d * 2 + d * kv * 2 + 3 * d * ffn);
const attn = 2 * 2 * B * shape.num_attention_heads * T * T * hd;
const fwdFlop = linear + attn;
console.log(`N ${N}: fwd ${med(tf).toFixed(1)} ms (${(fwdFlop / med(tf) / 1e6).toFixed(0)} GFLOP/s), bwd+recompute ${med(tb).toFixed(1)} ms (${(3 * fwdFlop / med(tb) / 1e6).toFixed(0)} GFLOP/s)`);
const L = shape.num_hidden_layers;
console.log(`per step est (layers only, checkpointed): ${((med(tf) + med(tb)) * L / 1000).toFixed(2)} s`);
if (process.env.PROF) { fwd.s.endProfiling(); bwd.s.endProfiling(); }
