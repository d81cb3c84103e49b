/**
 * The train-step graphs (issue #14): the whole Llama forward and its hand-written backward
 * (`ort-train-step-nodes.ts`) as ONNX graphs (opset 17) of symbolic batch and length, run by
 * onnxruntime. The RoPE tables and the attention bias (causal, padding, packing) are inputs,
 * computed as the tfjs model computes them; Llama and Qwen2 layers (with the projection biases
 * of `attention_bias` / Qwen2), tied embeddings and any `head_dim`. Three modes of one builder:
 * - `step`: forward, a per-position weighted logprob loss (`sftStep`'s cross-entropy: weight
 *   1 / completion tokens), backward, PyTorch's global-norm clipping and AdamW (decoupled weight
 *   decay) — one run per optimizer step;
 * - `grads`: forward and backward of the same loss (with an optional entropy term) at a temperature
 *   input, returning the gradients — GRPO's and accumulated micro-batches' path, where the per-token
 *   d loss / d logprob comes from @rlvr/core's `policyLoss`;
 * - `forward`: the logprobs and entropies of the targets at a temperature (π_old, the reference).
 * @internal
 */
import { OnnxDataType, valueInfo } from '@rlvr/model';
import { attentionBias } from '../model/prepared-input.js';
import { ropeTables } from '../model/rope.js';
import { isNoDecayParameter } from '../optim/adamw.js';
import { buildTokenBatch, type TokenBatch, type TokenSequence } from '../train/batch.js';
import {
  type GrpoHead,
  grpoLossWeights,
  grpoScalarInputs,
  grpoTokenInputs,
} from './ort-grpo-head.js';
import {
  type LayerCache,
  layerBackward,
  layerForward,
  type Param,
  StepNodes,
  type StepSettings,
  type TrainStepSpec,
} from './ort-train-step-nodes.js';

export type { GrpoHead } from './ort-grpo-head.js';
export type { Param, StepSettings, TrainStepSpec } from './ort-train-step-nodes.js';

/**
 * What a graph computes: `step` (the whole optimizer step), `grads` (the gradients only; with
 * `entropy`, an `entropy_weights` input adds d loss / d entropy) or `forward` (logprobs and
 * entropies). @internal
 */
export type GraphMode = {
  mode: 'step' | 'grads' | 'forward';
  entropy?: boolean;
  /**
   * A loss on the raw logits (`logitsStep`): `forward` returns the logits `[N, V]` (temperature 1)
   * instead of logprobs and entropies; `grads` takes d loss / d logits as the input `d_logits`
   * `[N, V]` and returns the gradients only (the caller's loss is the value).
   */
  logits?: boolean;
  /** `grads` and `step`: the loss weights are GRPO's, computed in the graph (`ort-grpo-head.ts`). */
  grpo?: GrpoHead;
};

/** Clipping and AdamW over every parameter: `[w', m', v']` per parameter, then the grad norm. */
function adamW(nodes: StepNodes): { updated: string[]; gradNorm: string } {
  const { g, s } = nodes;
  const scalar = (value: number) => g.float([value], []);
  const squares = nodes.params.map((p) =>
    nodes.op('ReduceSumSquare', [nodes.grads.get(p.name)!], { keepdims: 0 }),
  );
  const gradNorm = nodes.op('Sqrt', [nodes.op('Sum', squares)]);
  // PyTorch's clip_grad_norm_: max_norm / (norm + 1e-6), at most 1 (maxGradNorm 0: no clipping)
  const clip =
    s.maxGradNorm > 0
      ? nodes.op('Min', [
          scalar(1),
          nodes.op('Div', [scalar(s.maxGradNorm), nodes.add(gradNorm, scalar(1e-6))]),
        ])
      : scalar(1);
  const updated: string[] = [];
  for (const p of nodes.params) {
    const grad = nodes.mul(nodes.grads.get(p.name)!, clip);
    const m = nodes.add(
      nodes.mul(`${p.name}.m`, scalar(s.beta1)),
      nodes.mul(grad, scalar(1 - s.beta1)),
    );
    const v = nodes.add(
      nodes.mul(`${p.name}.v`, scalar(s.beta2)),
      nodes.mul(nodes.mul(grad, grad), scalar(1 - s.beta2)),
    );
    // fed per step: c1 = lr / (1 − β1ᵗ), c2 = 1 / (1 − β2ᵗ), keep = 1 − lr · weight decay
    const denominator = nodes.add(nodes.op('Sqrt', [nodes.mul(v, 'c2')]), scalar(s.epsilon));
    // norms and biases are not decayed (the trainer's `isNoDecayParameter`)
    const decayed = isNoDecayParameter(p.name) ? p.name : nodes.mul(p.name, 'keep');
    updated.push(nodes.sub(decayed, nodes.op('Div', [nodes.mul(m, 'c1'), denominator])), m, v);
  }
  return { updated, gradNorm };
}

/**
 * The loss head on the final norm's output: logits at temperature `1 / inv_temperature`,
 * `logprobs` (of the labels) and `entropy` per position, and — unless `forwardOnly` — the loss
 * −Σ w·logprob (w = `loss_weights`; `sftStep`'s cross-entropy with w = 1 / tokens) and
 * d loss / d (final norm output), with d loss / d logits =
 * `(w·(softmax − onehot) − e·softmax·(log softmax + H)) / T` (e = `entropy_weights`, GRPO's
 * entropy bonus; the formula of `logitsGradient`).
 */
function lossHead(
  nodes: StepNodes,
  hf: string,
  head: string,
  labelIds: string,
  graph: GraphMode,
): { logprobs: string; entropy: string; loss?: string; dHf?: string } {
  const { g } = nodes;
  const scaled = nodes.mul(nodes.linear(hf, head), 'inv_temperature');
  const logp = nodes.op('LogSoftmax', [scaled], { axis: -1 }); // [N, V]
  const probabilities = nodes.op('Exp', [logp]);
  const labels = nodes.op('Unsqueeze', [labelIds, g.int64([1])]);
  const picked = nodes.op('GatherElements', [logp, labels], { axis: 1 }); // [N, 1]
  const entropyColumn = nodes.op('Neg', [
    nodes.op('ReduceSum', [nodes.mul(probabilities, logp), g.int64([-1])], { keepdims: 1 }),
  ]);
  const flat = (x: string) => nodes.reshape(x, [-1]);
  const logprobs = flat(picked);
  const entropy = flat(entropyColumn);
  if (graph.mode === 'forward') return { logprobs, entropy };
  const lossWeights = graph.grpo ? grpoLossWeights(nodes, logprobs, graph.grpo) : 'loss_weights';
  const weights = nodes.op('Unsqueeze', [lossWeights, g.int64([1])]); // [N, 1]
  const loss = nodes.op('Neg', [
    nodes.op('ReduceSum', [nodes.mul(picked, weights)], { keepdims: 0 }),
  ]);
  const depth = g.int64([nodes.spec.vocab_size], []);
  const oneHot = nodes.op('OneHot', [labelIds, depth, g.float([0, 1], [2])], { axis: -1 });
  let dScaled = nodes.mul(nodes.sub(probabilities, oneHot), weights);
  if (graph.entropy === true) {
    const e = nodes.op('Unsqueeze', ['entropy_weights', g.int64([1])]);
    dScaled = nodes.sub(
      dScaled,
      nodes.mul(nodes.mul(e, probabilities), nodes.add(logp, entropyColumn)),
    );
  }
  const dLogits = nodes.mul(dScaled, 'inv_temperature');
  nodes.grads.set(head, nodes.weightGrad(dLogits, hf, head));
  return { logprobs, entropy, loss, dHf: nodes.inputGrad(dLogits, head) };
}

/**
 * The head of a loss on the raw logits: `forward` returns them; `grads` back-propagates the input
 * `d_logits` (d loss / d logits `[N, V]`).
 */
function logitsHead(
  nodes: StepNodes,
  hf: string,
  head: string,
  graph: GraphMode,
): { logits: string; dHf?: string } {
  const logits = nodes.linear(hf, head); // [N, V]
  if (graph.mode === 'forward') return { logits };
  nodes.grads.set(head, nodes.weightGrad('d_logits', hf, head));
  return { logits, dHf: nodes.inputGrad('d_logits', head) };
}

/** What the forward's head gives the outputs: per-position stats, or the logits. */
type HeadOutputs = { logprobs?: string; entropy?: string; logits?: string; loss?: string };

/** The forward to the loss head and, unless `forward` mode, the backward: every gradient. */
function modelGraph(nodes: StepNodes, graph: GraphMode): HeadOutputs {
  const { g, d, spec } = nodes;
  const vocab = spec.vocab_size;
  const embed = nodes.param('model.embed_tokens.weight', [vocab, d]);
  // token ids arrive as float32 (exact below 2^24) so that every input is a float32 tensor
  const ids = nodes.op('Cast', ['ids'], { to: OnnxDataType.INT64 });
  let x = nodes.op('Gather', [embed, ids], { axis: 0 }); // [N, d]
  const caches: LayerCache[] = [];
  for (let layer = 0; layer < spec.num_hidden_layers; layer++) {
    const { out, cache } = layerForward(nodes, layer, x);
    caches.push(cache);
    x = out;
  }
  const normF = nodes.rmsNorm(x, nodes.param('model.norm.weight', [d]));
  const tied = spec.tie_word_embeddings === true;
  const head = tied ? embed : nodes.param('lm_head.weight', [vocab, d]);
  const labels = nodes.op('Cast', ['labels'], { to: OnnxDataType.INT64 });
  const out: HeadOutputs & { dHf?: string } = graph.logits
    ? logitsHead(nodes, normF.h, head, graph)
    : lossHead(nodes, normF.h, head, labels, graph);
  if (out.dHf === undefined) return out;
  const headGrad = nodes.grads.get(head)!;
  let dx = nodes.rmsBackward(normF, out.dHf);
  for (let layer = spec.num_hidden_layers - 1; layer >= 0; layer--) {
    dx = layerBackward(nodes, caches[layer]!, dx);
  }
  // ScatterElements (sequential in onnxruntime): ScatterND's add reduction is atomic across
  // threads, so repeated token ids summed in a varying order made runs differ from run to run
  const rows = nodes.op('Expand', [
    nodes.op('Unsqueeze', [ids, g.int64([1])]),
    nodes.op('Shape', [dx]),
  ]);
  const zeros = nodes.op('ConstantOfShape', [g.int64([vocab, d])]);
  const embedGrad = nodes.op('ScatterElements', [zeros, rows, dx], {
    axis: 0,
    reduction: 'add',
  });
  nodes.grads.set(embed, tied ? nodes.add(headGrad, embedGrad) : embedGrad);
  return out;
}

/**
 * A train-step graph of one model (see the file's modes). Inputs: `ids`, `labels` `[N]` (float32
 * token ids; N = B·T), `inv_temperature` (1 / T), `cos`, `sin` `[B, T, 1, head_dim]`, `bias`
 * `[B, 1, 1, T·T]` and every parameter `<name>`; unless `forward`, `loss_weights` `[N]` (and with
 * `entropy`, `entropy_weights` `[N]`); in `step` mode also `c1`, `c2` (AdamW's bias-corrected step
 * factors), `keep` (1 − lr · weight decay) and the moments `<name>.m`, `<name>.v`. Outputs —
 * `step`: `loss`, `grad_norm` (before clipping), with a GRPO head `logprobs` and `entropy`, then
 * `<name>.new`, `<name>.m.new`, `<name>.v.new`;
 * `grads`: `loss`, `logprobs`, `entropy` `[N]`, `<name>.grad`; `forward`: `logprobs`, `entropy`.
 * With a GRPO head (`grads`), `ort-grpo-head.ts`'s inputs replace `loss_weights`. With `logits`:
 * `forward` outputs `logits` `[N, V]`; `grads` takes `d_logits` `[N, V]` instead of the loss weights
 * and outputs `<name>.grad` only.
 * @internal
 */
export function trainStepGraph(
  spec: TrainStepSpec,
  settings: StepSettings,
  graph: GraphMode = { mode: 'step' },
): { model: Uint8Array; params: Param[] } {
  const nodes = new StepNodes(spec, settings);
  const { g, hd } = nodes;
  const result = modelGraph(nodes, graph);
  let outputs: string[];
  let values: string[];
  if (graph.logits && graph.mode === 'step') {
    throw new Error('trainStepGraph: a logits loss has forward and grads modes only');
  }
  if (graph.logits) {
    const forward = graph.mode === 'forward';
    outputs = forward ? ['logits'] : nodes.params.map((p) => `${p.name}.grad`);
    values = forward ? [result.logits!] : nodes.params.map((p) => nodes.grads.get(p.name)!);
  } else if (graph.mode === 'forward') {
    outputs = ['logprobs', 'entropy'];
    values = [result.logprobs!, result.entropy!];
  } else if (graph.mode === 'grads') {
    outputs = ['loss', 'logprobs', 'entropy', ...nodes.params.map((p) => `${p.name}.grad`)];
    values = [
      result.loss!,
      result.logprobs!,
      result.entropy!,
      ...nodes.params.map((p) => nodes.grads.get(p.name)!),
    ];
  } else {
    const { updated, gradNorm } = adamW(nodes);
    const suffixes = ['new', 'm.new', 'v.new'];
    // with a GRPO head the step also returns the logprobs and entropies its loss was taken at
    const stats = graph.grpo ? ['logprobs', 'entropy'] : [];
    outputs = [
      'loss',
      'grad_norm',
      ...stats,
      ...nodes.params.flatMap((p) => suffixes.map((suffix) => `${p.name}.${suffix}`)),
    ];
    values = [
      result.loss!,
      gradNorm,
      ...(graph.grpo ? [result.logprobs!, result.entropy!] : []),
      ...updated,
    ];
  }
  values.forEach((value, index) => {
    g.add('Identity', [value], {}, [outputs[index]!]);
  });
  const { FLOAT } = OnnxDataType;
  const grpo = graph.mode === 'forward' ? undefined : graph.grpo;
  const weightInputs =
    graph.mode === 'forward' || graph.logits ? [] : grpo ? grpoTokenInputs(grpo) : ['loss_weights'];
  if (graph.mode !== 'forward' && graph.entropy === true) weightInputs.push('entropy_weights');
  const scalarInputs = [
    'inv_temperature',
    ...(grpo ? grpoScalarInputs(grpo) : []),
    ...(graph.mode === 'step' ? ['c1', 'c2', 'keep'] : []),
  ];
  const stepOnly = graph.mode === 'step';
  const model = g.encode({
    irVersion: 8,
    opset: 17,
    producerName: `@rlvr/trainer train-step graph (${graph.mode})`,
    graph: {
      name: `train_step_${graph.mode}`,
      input: [
        valueInfo('ids', FLOAT, ['N']),
        valueInfo('labels', FLOAT, ['N']),
        ...weightInputs.map((name) => valueInfo(name, FLOAT, ['N'])),
        ...scalarInputs.map((name) => valueInfo(name, FLOAT, [])),
        valueInfo('cos', FLOAT, ['B', 'T', 1, hd]),
        valueInfo('sin', FLOAT, ['B', 'T', 1, hd]),
        valueInfo('bias', FLOAT, ['B', 1, 1, 'TT']),
        ...(graph.logits && graph.mode === 'grads'
          ? [valueInfo('d_logits', FLOAT, ['N', nodes.spec.vocab_size])]
          : []),
        ...nodes.params.flatMap((p) =>
          (stepOnly ? ['', '.m', '.v'] : ['']).map((suffix) =>
            valueInfo(`${p.name}${suffix}`, FLOAT, p.shape),
          ),
        ),
      ],
      output: outputs.map((output) => valueInfo(output, FLOAT)),
    },
  });
  return { model, params: nodes.params };
}

/** A float32 graph input: its values and dims. @internal */
export type StepInput = { data: Float32Array; dims: number[] };

const scalar = (value: number): StepInput => ({ data: Float32Array.of(value), dims: [] });

/** `sftStep`'s loss weights: 1 / completion tokens at each completion position. @internal */
export function sftLossWeights(batch: TokenBatch): Float32Array {
  const { batchSize, seqLen } = batch.input;
  const tokens = batch.slots.reduce((sum, slots) => sum + slots.length, 0);
  const weights = new Float32Array(batchSize * seqLen);
  for (const slots of batch.slots) for (const slot of slots) weights[slot] = 1 / tokens;
  return weights;
}

/**
 * The batch inputs of {@link trainStepGraph} for a batch laid out by `buildTokenBatch`: ids,
 * labels, RoPE tables, attention bias, `inv_temperature` (default T = 1) and, when given, the
 * per-position `loss_weights` and `entropy_weights` (`[B·T]`). @internal
 */
export function batchInputs(
  batch: TokenBatch,
  model: { headDim: number; ropeTheta: number },
  options: {
    temperature?: number;
    lossWeights?: Float32Array;
    entropyWeights?: Float32Array;
    /** More `[B·T]` inputs by name (a GRPO head's). */
    tokens?: Record<string, Float32Array>;
    /** More scalar inputs by name. */
    scalars?: Record<string, number>;
  },
): Record<string, StepInput> {
  const { batchSize: b, seqLen: t, positions } = batch.input;
  const n = b * t;
  const rope = ropeTables(positions, model.headDim, model.ropeTheta);
  const inputs: Record<string, StepInput> = {
    ids: { data: Float32Array.from(batch.input.ids), dims: [n] },
    labels: { data: Float32Array.from(batch.targets), dims: [n] },
    inv_temperature: scalar(1 / (options.temperature ?? 1)),
    cos: { data: rope.cos, dims: [b, t, 1, model.headDim] },
    sin: { data: rope.sin, dims: [b, t, 1, model.headDim] },
    bias: { data: attentionBias(batch.input), dims: [b, 1, 1, t * t] },
  };
  if (options.lossWeights) inputs.loss_weights = { data: options.lossWeights, dims: [n] };
  if (options.entropyWeights) inputs.entropy_weights = { data: options.entropyWeights, dims: [n] };
  for (const [name, data] of Object.entries(options.tokens ?? {})) {
    inputs[name] = { data, dims: [n] };
  }
  for (const [name, value] of Object.entries(options.scalars ?? {})) inputs[name] = scalar(value);
  return inputs;
}

/**
 * The non-parameter inputs of a `step` graph: {@link batchInputs} with `loss` (default `sftStep`'s
 * loss weights at T = 1) and AdamW's factors of step `step`. @internal
 */
export function stepInputs(
  batch: TokenBatch,
  model: { headDim: number; ropeTheta: number },
  optimizer: {
    step: number;
    learningRate: number;
    beta1: number;
    beta2: number;
    weightDecay: number;
  },
  loss: Parameters<typeof batchInputs>[2] = { lossWeights: sftLossWeights(batch) },
): Record<string, StepInput> {
  const { step, learningRate } = optimizer;
  return {
    ...batchInputs(batch, model, loss),
    c1: scalar(learningRate / (1 - optimizer.beta1 ** step)),
    c2: scalar(1 / (1 - optimizer.beta2 ** step)),
    keep: scalar(1 - learningRate * optimizer.weightDecay),
  };
}

/** The parts of onnxruntime-node the runner uses (passed in: the package is an optional peer). */
type Ort = typeof import('onnxruntime-node');

/** Settings of {@link createOrtTrainStep}. @internal */
export type OrtTrainStepSettings = StepSettings & {
  learningRate: number;
  weightDecay: number;
  threads: number;
  /** Context limit (max_position_embeddings) for the batch layout. */
  maxLength: number;
};

/**
 * Runs {@link trainStepGraph} from `tensors` (Hugging Face names): weights and Adam moments live
 * in onnxruntime tensors, and each step's outputs are the next step's inputs. `step` lays the
 * sequences out as `sftStep` does (`buildTokenBatch`, right-padded or packed rows; the loss is
 * the mean over completion tokens) and returns the loss and the gradient norm before clipping.
 * @internal
 */
export async function createOrtTrainStep(
  ort: Ort,
  spec: TrainStepSpec,
  settings: OrtTrainStepSettings,
  tensors: ReadonlyMap<string, Float32Array>,
): Promise<{
  step(
    sequences: readonly TokenSequence[],
    options?: { pack?: boolean; learningRate?: number },
  ): Promise<{ loss: number; gradNorm: number }>;
  weights(): Map<string, Float32Array>;
  release(): Promise<void>;
}> {
  const { model, params } = trainStepGraph(spec, settings);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: settings.threads,
    graphOptimizationLevel: 'all',
  });
  type OrtTensor = InstanceType<Ort['Tensor']>;
  const state: Record<string, OrtTensor> = {};
  for (const p of params) {
    const data = tensors.get(p.name);
    if (data === undefined) throw new Error(`createOrtTrainStep: no tensor '${p.name}'`);
    state[p.name] = new ort.Tensor('float32', Float32Array.from(data), p.shape);
    state[`${p.name}.m`] = new ort.Tensor('float32', new Float32Array(data.length), p.shape);
    state[`${p.name}.v`] = new ort.Tensor('float32', new Float32Array(data.length), p.shape);
  }
  const hd = spec.head_dim ?? spec.hidden_size / spec.num_attention_heads;
  const float = (data: Float32Array, dims: number[]) => new ort.Tensor('float32', data, dims);
  let t = 0;
  return {
    async step(sequences, options = {}) {
      const batch = buildTokenBatch(sequences, {
        maxLength: settings.maxLength,
        vocabSize: spec.vocab_size,
        functionName: 'createOrtTrainStep().step',
        ...(options.pack === undefined ? {} : { pack: options.pack }),
      });
      t += 1;
      const inputs = stepInputs(
        batch,
        { headDim: hd, ropeTheta: settings.ropeTheta },
        { ...settings, step: t, learningRate: options.learningRate ?? settings.learningRate },
      );
      const feeds: Record<string, OrtTensor> = { ...state };
      for (const [name, input] of Object.entries(inputs))
        feeds[name] = float(input.data, input.dims);
      const out = await session.run(feeds);
      for (const p of params) {
        state[p.name] = out[`${p.name}.new`]!;
        state[`${p.name}.m`] = out[`${p.name}.m.new`]!;
        state[`${p.name}.v`] = out[`${p.name}.v.new`]!;
      }
      const value = (name: string) => (out[name]!.data as Float32Array)[0]!;
      return { loss: value('loss'), gradNorm: value('grad_norm') };
    },
    weights: () => new Map(params.map((p) => [p.name, state[p.name]!.data as Float32Array])),
    release: () => session.release(),
  };
}
