import type { LlamaConfig } from '@rlvr/model';
import * as tf from '@tensorflow/tfjs-core';
import type { AdamW } from '../optim/adamw.js';
import type { TokenBatch } from '../train/batch.js';
import { ortMatMulActive, runOrtGraph } from './ort-matmul.js';
import {
  batchInputs,
  type GraphMode,
  type GrpoHead,
  type StepInput,
  type StepSettings,
  stepInputs,
  type TrainStepSpec,
  trainStepGraph,
} from './ort-train-step.js';

/** Name of the train-step graph kernel (the modes of `trainStepGraph`) for wasm. */
export const ORT_TRAIN_STEP = 'RlvrOrtTrainStep';

type Attrs = { key: string; names: string[] };

/** Graph settings by kernel key (the key is their JSON). */
const settingsByKey = new Map<
  string,
  { spec: TrainStepSpec; settings: StepSettings; graph: GraphMode }
>();

/** The outputs of a mode: name and shape, in the order the kernel returns them. */
function outputsOf(
  graph: GraphMode,
  inputs: tf.NamedTensorInfoMap,
  names: readonly string[],
): { name: string; shape: number[] }[] {
  const shapeOf = (name: string) => inputs[name]!.shape;
  if (graph.logits && graph.mode === 'forward') {
    // [N, vocab]: the embedding's rows are the vocabulary
    const vocab = shapeOf('model.embed_tokens.weight')[0]!;
    return [{ name: 'logits', shape: [...shapeOf('ids'), vocab] }];
  }
  if (graph.logits) return names.map((name) => ({ name: `${name}.grad`, shape: shapeOf(name) }));
  if (graph.mode === 'forward') {
    return ['logprobs', 'entropy'].map((name) => ({ name, shape: shapeOf('ids') }));
  }
  if (graph.mode === 'grads') {
    return [
      { name: 'loss', shape: [] },
      { name: 'logprobs', shape: shapeOf('ids') },
      { name: 'entropy', shape: shapeOf('ids') },
      ...names.map((name) => ({ name: `${name}.grad`, shape: shapeOf(name) })),
    ];
  }
  return [
    { name: 'loss', shape: [] },
    { name: 'grad_norm', shape: [] },
    ...(graph.grpo ? ['logprobs', 'entropy'].map((name) => ({ name, shape: shapeOf('ids') })) : []),
    ...names.flatMap((name) =>
      ['new', 'm.new', 'v.new'].map((suffix) => ({
        name: `${name}.${suffix}`,
        shape: shapeOf(name),
      })),
    ),
  ];
}

/**
 * A train-step graph as a kernel: inputs are the graph's inputs by name (float32 on the wasm
 * heap, passed to onnxruntime as views), outputs those of its mode (`outputsOf`, parameters in
 * `names` order); one onnxruntime session per model, settings and mode.
 */
function ortTrainStep(args: {
  inputs: tf.NamedTensorInfoMap;
  backend: unknown;
  attrs?: tf.NamedAttrMap;
}): tf.TensorInfo[] {
  const { key, names } = args.attrs as unknown as Attrs;
  const { spec, settings, graph } = settingsByKey.get(key)!;
  const feeds = Object.entries(args.inputs).map(([name, info]) => ({
    name,
    info: info!,
    dims: info!.shape,
  }));
  return runOrtGraph(
    args.backend,
    `train-step|${key}`,
    () => trainStepGraph(spec, settings, graph).model,
    feeds,
    outputsOf(graph, args.inputs, names),
    // hundreds of ops per run: spinning measured +4% (0.8M) and +6% (5M) on the SFT bench; not the
    // forward graph, whose threads would still spin while the step graph that follows it runs
    // (π_old / reference forward, then the step: 202 → 157 ms per 0.8M GRPO step)
    { spinning: graph.mode !== 'forward' },
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

/** What one graph step computed; nothing is applied until `commit`. @internal */
export type GraphStep = {
  loss: number;
  gradNorm: number;
  /** With a GRPO loss: the logprobs and entropies `[B·T]` the loss was taken at. */
  logprobs?: Float32Array;
  entropy?: Float32Array;
  /** The new weights (the caller swaps them in); the new moments go into the optimizer. */
  commit(): Map<string, tf.Tensor>;
  /** Frees the step's outputs (a skipped update). */
  discard(): void;
};

/** The graph settings of a model (the optimizer's for `step` mode). */
function settingsOf(
  config: LlamaConfig,
  optimizer: { beta1: number; beta2: number; epsilon: number } | undefined,
  maxGradNorm: number,
): StepSettings {
  return {
    linearLayout: 'in-out',
    ropeTheta: config.rope_theta,
    rmsNormEps: config.rms_norm_eps,
    // `forward` and `grads` graphs do not use the optimizer settings: one session for every trainer
    beta1: optimizer?.beta1 ?? 0,
    beta2: optimizer?.beta2 ?? 0,
    epsilon: optimizer?.epsilon ?? 0,
    maxGradNorm,
  };
}

/**
 * Runs a graph of `mode` on `params` (Hugging Face names → the model's tensors) and the batch
 * inputs `values` (plus `extra` tensors, not disposed here); returns the kernel's outputs.
 */
function runGraph(
  config: LlamaConfig,
  stepSettings: StepSettings,
  graph: GraphMode,
  params: ReadonlyMap<string, tf.Tensor>,
  values: Record<string, StepInput>,
  extra: tf.NamedTensorMap = {},
): tf.Tensor[] {
  const spec: TrainStepSpec = config;
  const key = JSON.stringify({ spec, stepSettings, graph });
  if (!settingsByKey.has(key)) settingsByKey.set(key, { spec, settings: stepSettings, graph });
  const temporaries: tf.Tensor[] = [];
  const inputs: tf.NamedTensorMap = { ...extra };
  for (const [name, input] of Object.entries(values)) {
    const tensor = tf.tensor(input.data, input.dims, 'float32');
    temporaries.push(tensor);
    inputs[name] = tensor;
  }
  for (const [name, param] of params) inputs[name] = param;
  const attrs = { key, names: [...params.keys()] } as unknown as tf.NamedAttrMap;
  try {
    return tf.engine().runKernel(ORT_TRAIN_STEP, inputs, attrs) as unknown as tf.Tensor[];
  } finally {
    for (const tensor of temporaries) tensor.dispose();
  }
}

/** Reads and frees a float32 output. */
function readFloat32(tensor: tf.Tensor): Float32Array {
  const data = tensor.dataSync() as Float32Array;
  tensor.dispose();
  return data;
}

/** Reads and frees a scalar output. */
function scalarOf(tensor: tf.Tensor): number {
  return readFloat32(tensor)[0]!;
}

/**
 * One optimizer step on one micro-batch as one onnxruntime graph: forward, the loss — `sftStep`'s
 * cross-entropy averaged over the completion tokens of `batch`, or with `loss` GRPO's (its head,
 * inputs and temperature) — backward, clipping at `maxGradNorm` (0: none) and the optimizer's
 * AdamW update at `learningRate`, on the weights `params` (Hugging Face names).
 * @internal
 */
export function graphStep(
  config: LlamaConfig,
  params: ReadonlyMap<string, tf.Tensor>,
  optimizer: AdamW,
  batch: TokenBatch,
  settings: { learningRate: number; maxGradNorm: number },
  loss?: { temperature: number; grpo: GraphGrpoLoss; entropyWeights?: Float32Array },
): GraphStep {
  const names = [...params.keys()];
  const moments = optimizer.moments();
  const zeros: tf.Tensor[] = [];
  const extra: tf.NamedTensorMap = {};
  for (const name of names) {
    for (const [suffix, held] of [
      ['m', moments.m],
      ['v', moments.v],
    ] as const) {
      let moment = held.get(name);
      if (moment === undefined) {
        moment = tf.zerosLike(params.get(name)!);
        zeros.push(moment);
      }
      extra[`${name}.${suffix}`] = moment;
    }
  }
  const values = stepInputs(
    batch,
    { headDim: config.head_dim, ropeTheta: config.rope_theta },
    { ...optimizer, step: optimizer.step + 1, learningRate: settings.learningRate },
    loss && {
      temperature: loss.temperature,
      tokens: loss.grpo.tokens,
      scalars: loss.grpo.scalars,
      ...(loss.entropyWeights ? { entropyWeights: loss.entropyWeights } : {}),
    },
  );
  const graph: GraphMode = loss
    ? { mode: 'step', entropy: loss.entropyWeights !== undefined, grpo: loss.grpo.head }
    : { mode: 'step' };
  let outputs: tf.Tensor[];
  try {
    const stepSettings = settingsOf(config, optimizer, settings.maxGradNorm);
    outputs = runGraph(config, stepSettings, graph, params, values, extra);
  } finally {
    for (const tensor of zeros) tensor.dispose();
  }
  const stats = loss
    ? { logprobs: readFloat32(outputs[2]!), entropy: readFloat32(outputs[3]!) }
    : {};
  const updated = outputs.slice(loss ? 4 : 2);
  return {
    loss: scalarOf(outputs[0]!),
    gradNorm: scalarOf(outputs[1]!),
    ...stats,
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

/**
 * The logprobs and entropies (nats) of `batch`'s targets under `softmax(logits / temperature)` at
 * every position `[B·T]` (padding positions hold values of no meaning), as one graph run.
 * @internal
 */
export function graphForward(
  config: LlamaConfig,
  params: ReadonlyMap<string, tf.Tensor>,
  batch: TokenBatch,
  temperature: number,
): { logprobs: Float32Array; entropy: Float32Array } {
  const values = batchInputs(
    batch,
    { headDim: config.head_dim, ropeTheta: config.rope_theta },
    { temperature },
  );
  const graph: GraphMode = { mode: 'forward' };
  const [lp, en] = runGraph(config, settingsOf(config, undefined, 0), graph, params, values);
  return { logprobs: readFloat32(lp!), entropy: readFloat32(en!) };
}

/** The raw logits `[B·T·V]` (temperature 1) of every position of `batch`, one graph run. @internal */
export function graphLogits(
  config: LlamaConfig,
  params: ReadonlyMap<string, tf.Tensor>,
  batch: TokenBatch,
): Float32Array {
  const values = batchInputs(batch, { headDim: config.head_dim, ropeTheta: config.rope_theta }, {});
  const graph: GraphMode = { mode: 'forward', logits: true };
  const [logits] = runGraph(config, settingsOf(config, undefined, 0), graph, params, values);
  return readFloat32(logits!);
}

/**
 * The gradients, for `batch`, of a loss whose d loss / d logits `[B·T·V]` (raw logits, zero off
 * the loss positions) is `dLogits`: forward and backward as one graph run; a `Map` of Hugging
 * Face name → gradient in the model's layout (caller disposes). @internal
 */
export function graphLogitsGradients(
  config: LlamaConfig,
  params: ReadonlyMap<string, tf.Tensor>,
  batch: TokenBatch,
  dLogits: Float32Array,
): Map<string, tf.Tensor> {
  const values = batchInputs(batch, { headDim: config.head_dim, ropeTheta: config.rope_theta }, {});
  const n = batch.input.batchSize * batch.input.seqLen;
  values.d_logits = { data: dLogits, dims: [n, config.vocab_size] };
  const graph: GraphMode = { mode: 'grads', logits: true };
  const outputs = runGraph(config, settingsOf(config, undefined, 0), graph, params, values);
  return new Map([...params.keys()].map((name, index) => [name, outputs[index]!]));
}

/** GRPO's loss inside the `grads` graph: the head and its inputs (see `ort-grpo-head.ts`). */
export type GraphGrpoLoss = {
  head: GrpoHead;
  /** `[B·T]` inputs by name (`advantages`, `agg_weights`, …; zero off the completion slots). */
  tokens: Record<string, Float32Array>;
  scalars: Record<string, number>;
};

/**
 * The gradients, for `batch`, of Σ over positions of `−lossWeights·logprob +
 * entropyWeights·entropy` (the tempered distribution at `temperature`; `[B·T]` weights, zero off
 * the loss positions) — or, with `grpo`, of GRPO's loss with its weights computed in the graph —
 * as one graph run (forward + backward): a `Map` of Hugging Face name → gradient in the model's
 * layout (caller disposes), the value of −Σ w·logprob, and the logprobs and entropies `[B·T]` the
 * forward computed.
 * @internal
 */
export function graphGradients(
  config: LlamaConfig,
  params: ReadonlyMap<string, tf.Tensor>,
  batch: TokenBatch,
  weights: {
    temperature: number;
    lossWeights?: Float32Array;
    entropyWeights?: Float32Array;
    grpo?: GraphGrpoLoss;
  },
): { loss: number; logprobs: Float32Array; entropy: Float32Array; grads: Map<string, tf.Tensor> } {
  const { grpo, ...rest } = weights;
  const values = batchInputs(
    batch,
    { headDim: config.head_dim, ropeTheta: config.rope_theta },
    grpo ? { ...rest, tokens: grpo.tokens, scalars: grpo.scalars } : rest,
  );
  const graph: GraphMode = {
    mode: 'grads',
    entropy: weights.entropyWeights !== undefined,
    ...(grpo ? { grpo: grpo.head } : {}),
  };
  const outputs = runGraph(config, settingsOf(config, undefined, 0), graph, params, values);
  const names = [...params.keys()];
  return {
    loss: scalarOf(outputs[0]!),
    logprobs: readFloat32(outputs[1]!),
    entropy: readFloat32(outputs[2]!),
    grads: new Map(names.map((name, index) => [name, outputs[index + 3]!])),
  };
}
