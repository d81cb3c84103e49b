import * as tf from '@tensorflow/tfjs-core';
import { encodeGraph } from './ort-graph.js';
import { ortMatMulActive, runOrtGraph } from './ort-matmul.js';

/** Name of the fused SwiGLU kernel (forward and backward) registered for wasm. */
export const ORT_SWIGLU = 'RlvrOrtSwiGlu';
/** Name of the fused RMSNorm kernel (forward and backward) registered for wasm. */
export const ORT_RMS_NORM = 'RlvrOrtRmsNorm';

function swiGluModel(width: number, backward: boolean): Uint8Array {
  const inputs: [string, (string | number)[]][] = [['gateUp', ['N', 2 * width]]];
  if (backward) inputs.push(['dAct', ['N', width]]);
  return encodeGraph(`swiglu_${backward ? 'backward' : 'forward'}`, inputs, ['y'], (g) => {
    const [gate, up] = g.add('Split', ['gateUp', g.int64([width, width])], { axis: 1 }, 2);
    const sigmoid = g.op('Sigmoid', [gate!]);
    const silu = g.op('Mul', [gate!, sigmoid]);
    if (!backward) return [g.op('Mul', [silu, up!])];
    const dUp = g.op('Mul', ['dAct', silu]);
    // silu'(g) = σ(g)·(1 + g·(1 − σ(g)))
    const slope = g.op('Mul', [
      sigmoid,
      g.op('Add', [g.float([1]), g.op('Mul', [gate!, g.op('Sub', [g.float([1]), sigmoid])])]),
    ]);
    const dGate = g.op('Mul', [g.op('Mul', ['dAct', up!]), slope]);
    return [g.op('Concat', [dGate, dUp], { axis: 1 })];
  });
}

function rmsNormModel(epsilon: number, backward: boolean): Uint8Array {
  if (!backward) {
    return encodeGraph(
      'rms_norm_forward',
      [
        ['x', ['N', 'D']],
        ['gain', ['D']],
      ],
      ['h', 'xhat', 'r'],
      (g) => {
        const meanSquare = g.op('ReduceMean', [g.op('Mul', ['x', 'x'])], {
          axes: [-1],
          keepdims: 1,
        });
        const r = g.op('Reciprocal', [
          g.op('Sqrt', [g.op('Add', [meanSquare, g.float([epsilon])])]),
        ]);
        const xhat = g.op('Mul', ['x', r]);
        return [g.op('Mul', [xhat, 'gain']), xhat, r];
      },
    );
  }
  return encodeGraph(
    'rms_norm_backward',
    [
      ['dh', ['N', 'D']],
      ['xhat', ['N', 'D']],
      ['r', ['N', 1]],
      ['gain', ['D']],
    ],
    ['dx', 'dGain'],
    (g) => {
      const dGain = g.op('ReduceSum', [g.op('Mul', ['dh', 'xhat']), g.int64([0])], { keepdims: 0 });
      const dxhat = g.op('Mul', ['dh', 'gain']);
      const projection = g.op('ReduceMean', [g.op('Mul', [dxhat, 'xhat'])], {
        axes: [-1],
        keepdims: 1,
      });
      const dx = g.op('Mul', ['r', g.op('Sub', [dxhat, g.op('Mul', ['xhat', projection])])]);
      return [dx, dGain];
    },
  );
}

type Args = { inputs: tf.NamedTensorInfoMap; backend: unknown; attrs?: tf.NamedAttrMap };

/**
 * SwiGLU of a fused gate/up projection `[n, 2m]` in one onnxruntime session: forward
 * `silu(gate)·up` `[n, m]`; backward (`backward: true`, with `dAct`) `[dGate | dUp]` `[n, 2m]`.
 */
function ortSwiGlu(args: Args): tf.TensorInfo[] {
  const backward = args.attrs!.backward as boolean;
  const gateUp = args.inputs.gateUp!;
  const [n, doubled] = gateUp.shape as [number, number];
  const width = doubled / 2;
  const feeds = [{ name: 'gateUp', info: gateUp, dims: gateUp.shape }];
  if (backward) feeds.push({ name: 'dAct', info: args.inputs.dAct!, dims: [n, width] });
  return runOrtGraph(
    args.backend,
    `swiglu|${width}|${backward}`,
    () => swiGluModel(width, backward),
    feeds,
    [{ name: 'y', shape: [n, backward ? doubled : width] }],
  );
}

/**
 * RMSNorm with gain in one onnxruntime session: forward `x`, `gain` → `h = x̂·gain`, `x̂ = x·r`,
 * `r = 1/√(mean(x²) + ε)` `[n, 1]`; backward `dh`, `x̂`, `r`, `gain` → `dx`, `dGain`.
 */
function ortRmsNorm(args: Args): tf.TensorInfo[] {
  const { backward, epsilon } = args.attrs as unknown as { backward: boolean; epsilon: number };
  const input = args.inputs;
  const key = `rmsnorm|${epsilon}|${backward}`;
  const build = () => rmsNormModel(epsilon, backward);
  if (!backward) {
    const [n, d] = input.x!.shape as [number, number];
    return runOrtGraph(
      args.backend,
      key,
      build,
      [
        { name: 'x', info: input.x!, dims: [n, d] },
        { name: 'gain', info: input.gain!, dims: [d] },
      ],
      [
        { name: 'h', shape: [n, d] },
        { name: 'xhat', shape: [n, d] },
        { name: 'r', shape: [n, 1] },
      ],
    );
  }
  const [n, d] = input.dh!.shape as [number, number];
  return runOrtGraph(
    args.backend,
    key,
    build,
    [
      { name: 'dh', info: input.dh!, dims: [n, d] },
      { name: 'xhat', info: input.xhat!, dims: [n, d] },
      { name: 'r', info: input.r!, dims: [n, 1] },
      { name: 'gain', info: input.gain!, dims: [d] },
    ],
    [
      { name: 'dx', shape: [n, d] },
      { name: 'dGain', shape: [d] },
    ],
  );
}

/** Registers {@link ORT_SWIGLU} and {@link ORT_RMS_NORM} for wasm (idempotent). @internal */
export function registerOrtElementwise(): void {
  const kernels: [string, (args: Args) => tf.TensorInfo[]][] = [
    [ORT_SWIGLU, ortSwiGlu],
    [ORT_RMS_NORM, ortRmsNorm],
  ];
  for (const [kernelName, kernelFunc] of kernels) {
    if (tf.getKernel(kernelName, 'wasm') !== undefined) continue;
    tf.registerKernel({
      kernelName,
      backendName: 'wasm',
      kernelFunc: kernelFunc as unknown as tf.KernelFunc,
    });
  }
}

/** True when models created now run `kernelName` (one of this file's kernels). @internal */
export function ortKernelActive(kernelName: string): boolean {
  return ortMatMulActive() && tf.getKernel(kernelName, 'wasm') !== undefined;
}

/** `silu(gate)·up` of a fused `[n, 2m]` gate/up projection. @internal */
export function ortSwiGluForward(gateUp: tf.Tensor2D): tf.Tensor2D {
  const out = tf.engine().runKernel(ORT_SWIGLU, { gateUp }, { backward: false });
  return (out as unknown as tf.Tensor2D[])[0]!;
}

/** `[dGate | dUp]` `[n, 2m]` given `dAct` `[n, m]`. @internal */
export function ortSwiGluBackward(dAct: tf.Tensor2D, gateUp: tf.Tensor2D): tf.Tensor2D {
  const out = tf.engine().runKernel(ORT_SWIGLU, { gateUp, dAct }, { backward: true });
  return (out as unknown as tf.Tensor2D[])[0]!;
}

/** RMSNorm forward: `[h, xhat, r]`. @internal */
export function ortRmsNormForward(
  x: tf.Tensor2D,
  gain: tf.Tensor,
  epsilon: number,
): [tf.Tensor2D, tf.Tensor2D, tf.Tensor2D] {
  const out = tf.engine().runKernel(ORT_RMS_NORM, { x, gain }, { backward: false, epsilon });
  return out as unknown as [tf.Tensor2D, tf.Tensor2D, tf.Tensor2D];
}

/** RMSNorm backward: `[dx, dGain]`. @internal */
export function ortRmsNormBackward(
  dh: tf.Tensor2D,
  xhat: tf.Tensor2D,
  r: tf.Tensor2D,
  gain: tf.Tensor,
): [tf.Tensor2D, tf.Tensor1D] {
  const out = tf
    .engine()
    .runKernel(ORT_RMS_NORM, { dh, xhat, r, gain }, { backward: true, epsilon: 0 });
  return out as unknown as [tf.Tensor2D, tf.Tensor1D];
}
