import type { LlamaConfig } from '@rlvr/model';
import * as tf from '@tensorflow/tfjs-core';
import type { AdamW } from '../optim/adamw.js';
import type { TokenBatch } from '../train/batch.js';
import { ortMatMulActive, runOrtGraph } from './ort-matmul.js';
import {
  type StepSettings,
  stepInputs,
  type TrainStepSpec,
  trainStepGraph,
} from './ort-train-step.js';

/** Name of the one-graph train step kernel (forward, backward, clipping, AdamW) for wasm. */
export const ORT_TRAIN_STEP = 'RlvrOrtTrainStep';

type Attrs = { key: string; names: string[] };

/** Graph settings by kernel key (the key is their JSON). */
const settingsByKey = new Map<string, { spec: TrainStepSpec; settings: StepSettings }>();

/**
 * The train-step graph as a kernel: inputs are the graph's inputs by name (float32 on the wasm
 * heap, passed to onnxruntime as views), outputs `loss`, `grad_norm` and per parameter (in
 * `names` order) its new value and moments; one onnxruntime session per model and settings.
 */
function ortTrainStep(args: {
  inputs: tf.NamedTensorInfoMap;
  backend: unknown;
  attrs?: tf.NamedAttrMap;
}): tf.TensorInfo[] {
  const { key, names } = args.attrs as unknown as Attrs;
  const { spec, settings } = settingsByKey.get(key)!;
  const feeds = Object.entries(args.inputs).map(([name, info]) => ({
    name,
    info: info!,
    dims: info!.shape,
  }));
  const outputs = [
    { name: 'loss', shape: [] },
    { name: 'grad_norm', shape: [] },
    ...names.flatMap((name) => {
      const shape = args.inputs[name]!.shape;
      return ['new', 'm.new', 'v.new'].map((suffix) => ({ name: `${name}.${suffix}`, shape }));
    }),
  ];
  return runOrtGraph(
    args.backend,
    `train-step|${key}`,
    () => trainStepGraph(spec, settings).model,
    feeds,
    outputs,
  );
}

/** Registers {@link ORT_TRAIN_STEP} for wasm (idempotent). @internal */
export function registerOrtTrainStep(): void {
  if (tf.getKernel(ORT_TRAIN_STEP, 'wasm') !== undefined) return;
  tf.registerKernel({
    kernelName: ORT_TRAIN_STEP,
    backendName: 'wasm',
    kernelFunc: ortTrainStep as unknown as tf.KernelFunc,
  });
}

/** True when models created now can take `sftStep` as one onnxruntime graph. @internal */
export function ortTrainStepActive(): boolean {
  return (
    tf.getBackend() === 'wasm' &&
    ortMatMulActive() &&
    tf.getKernel(ORT_TRAIN_STEP, 'wasm') !== undefined
  );
}

/** Whether the graph covers a model config (it has no projection biases). @internal */
export function trainStepSupports(config: LlamaConfig): boolean {
  return !config.attention_bias;
}

/** What one graph step computed; nothing is applied until `commit`. @internal */
export type GraphStep = {
  loss: number;
  gradNorm: number;
  /** The new weights (the caller swaps them in); the new moments go into the optimizer. */
  commit(): Map<string, tf.Tensor>;
  /** Frees the step's outputs (a skipped update). */
  discard(): void;
};

/**
 * One `sftStep` (cross-entropy averaged over the completion tokens of `batch`, one micro-batch)
 * as one onnxruntime graph: forward, backward, clipping at `maxGradNorm` (0: none) and the
 * optimizer's AdamW update at `learningRate`, on the weights `params` (Hugging Face names).
 * @internal
 */
export function graphSftStep(
  config: LlamaConfig,
  params: ReadonlyMap<string, tf.Tensor>,
  optimizer: AdamW,
  batch: TokenBatch,
  settings: { learningRate: number; maxGradNorm: number },
): GraphStep {
  const spec: TrainStepSpec = config;
  const stepSettings: StepSettings = {
    linearLayout: 'in-out',
    ropeTheta: config.rope_theta,
    rmsNormEps: config.rms_norm_eps,
    beta1: optimizer.beta1,
    beta2: optimizer.beta2,
    epsilon: optimizer.epsilon,
    maxGradNorm: settings.maxGradNorm,
  };
  const key = JSON.stringify({ spec, stepSettings });
  if (!settingsByKey.has(key)) settingsByKey.set(key, { spec, settings: stepSettings });
  const names = [...params.keys()];
  const moments = optimizer.moments();
  const temporaries: tf.Tensor[] = [];
  const temporary = (tensor: tf.Tensor) => {
    temporaries.push(tensor);
    return tensor;
  };
  const inputs: tf.NamedTensorMap = {};
  const batchInputs = stepInputs(
    batch,
    { headDim: config.head_dim, ropeTheta: config.rope_theta },
    { ...optimizer, step: optimizer.step + 1, learningRate: settings.learningRate },
  );
  for (const [name, input] of Object.entries(batchInputs)) {
    inputs[name] = temporary(tf.tensor(input.data, input.dims, 'float32'));
  }
  for (const name of names) {
    const param = params.get(name)!;
    inputs[name] = param;
    inputs[`${name}.m`] = moments.m.get(name) ?? temporary(tf.zerosLike(param));
    inputs[`${name}.v`] = moments.v.get(name) ?? temporary(tf.zerosLike(param));
  }
  const attrs = { key, names } as unknown as tf.NamedAttrMap;
  let outputs: tf.Tensor[];
  try {
    outputs = tf.engine().runKernel(ORT_TRAIN_STEP, inputs, attrs) as unknown as tf.Tensor[];
  } finally {
    for (const tensor of temporaries) tensor.dispose();
  }
  const [lossTensor, normTensor] = outputs;
  const loss = lossTensor!.dataSync()[0]!;
  const gradNorm = normTensor!.dataSync()[0]!;
  lossTensor!.dispose();
  normTensor!.dispose();
  const updated = outputs.slice(2);
  return {
    loss,
    gradNorm,
    commit() {
      const next = new Map<string, tf.Tensor>();
      const m = new Map<string, tf.Tensor>();
      const v = new Map<string, tf.Tensor>();
      names.forEach((name, index) => {
        next.set(name, updated[3 * index]!);
        m.set(name, updated[3 * index + 1]!);
        v.set(name, updated[3 * index + 2]!);
      });
      optimizer.adopt(m, v);
      return next;
    },
    discard() {
      for (const tensor of updated) tensor.dispose();
    },
  };
}
