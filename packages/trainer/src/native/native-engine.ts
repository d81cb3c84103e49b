/**
 * The native engine's forward and backward over a whole model: the embedding (a row gather, and
 * a scatter-add backward, in JS), one onnxruntime session run per layer (`layer-graph.ts`: the
 * same sessions for every layer of a shape), the final norm, and the LM head one vocabulary chunk
 * at a time on the loss positions only (`head-graph.ts`). Activations are kept per layer as the
 * layer's input (recomputed in the backward: checkpointing) or as the layer's cache tensors.
 * Weights and gradients are {@link SlotBuffers} (native memory, Hugging Face layout).
 * @internal
 */
import type { ModelArchitecture, ModelConfig } from '@rlvr/model';
import { attentionBias } from '../batch/prepared-input.js';
import { ropeTablesOf } from '../batch/rope.js';
import type { TokenBatch } from '../batch/token-batch.js';
import { type HeadGraphMode, headGraph } from './head-graph.js';
import {
  gradientNames,
  type LayerGraphMode,
  type LayerLora,
  type LayerSpec,
  type LoraModule,
  layerCache,
  layerGraph,
  layerParamNames,
  layerParamShapes,
} from './layer-graph.js';
import { type LoraAdapters, loraSlot } from './lora-adapters.js';
import type { Feed, SessionCache } from './ort-runtime.js';
import {
  architectureOf,
  layerSlot,
  layerSpecOf,
  type Slot,
  SlotBuffers,
  storeSlots,
} from './param-store.js';

/** How a forward keeps what its backward needs. @internal */
export type Keep = 'none' | 'recompute' | 'cache';

/**
 * LoRA adapters in a forward: the adapters, their current weights and the seed of this forward's
 * dropout masks (the backward draws the same). Without them the base model runs alone (the
 * reference policy of a LoRA run: adapters off). @internal
 */
export type EngineLora = {
  adapters: LoraAdapters;
  weights: SlotBuffers;
  maskSeed: number;
  /** The adapters' graph settings, when not the adapters' own (no dropout in evaluation). */
  layer?: LayerLora;
};

/** A forward pass's saved state. @internal */
export type ForwardState = {
  batch: TokenBatch;
  /** Per layer: its RoPE tables and attention bias (shared by the layers with the same ones). */
  tables: Record<'cos' | 'sin' | 'bias', Feed>[];
  /** Per layer: its input (recompute) and, with `cache`, its cache tensors. */
  layers: { x: Float32Array; cache?: Record<string, Float32Array> }[];
  /** The last layer's output `[N, d]`. */
  last: Float32Array;
  /** Loss positions (flat `B·T` indices, sorted by sequence then token) and their final-norm output. */
  positions: Int32Array;
  hidden: Float32Array;
  /** The adapters of the forward (its backward trains them only). */
  lora?: EngineLora;
};

/** Per-position values of the head on the loss positions of a forward. @internal */
export type HeadStats = { logprobs: Float32Array; entropy: Float32Array; lse: Float32Array };

/** What a backward takes per loss position (aligned with `ForwardState.positions`). @internal */
export type HeadWeights = {
  temperature: number;
  /** −d loss / d logprob. */
  lossWeights: Float32Array;
  /** d loss / d entropy (with `entropy`, the forward's entropies at the same positions). */
  entropyWeights?: Float32Array;
  stats: HeadStats;
};

/**
 * Where a backward writes gradients, by slot: set a slot's gradient, or add into it (zeroed on
 * first use in a step); `grads` gives the current values (the layers' accumulation inputs).
 * {@link TrainStore} is one. @internal
 */
export type GradSink = {
  readonly grads: SlotBuffers;
  hasGrad(key: string): boolean;
  setGrad(key: string, values: Float32Array): void;
  /**
   * Slot `key`'s gradient to add into, zeroed on its first use in a step — or, with `overwrite`,
   * not zeroed: the caller writes every value.
   */
  gradToAdd(key: string, overwrite?: boolean): Float32Array;
};

/** A {@link GradSink} of plain arrays (tests, and gradients kept apart from a store). @internal */
export class ArrayGradSink implements GradSink {
  readonly grads: SlotBuffers;
  private readonly written = new Set<string>();
  constructor(slots: readonly Slot[]) {
    this.grads = new SlotBuffers(slots);
  }
  hasGrad(key: string): boolean {
    return this.written.has(key);
  }
  setGrad(key: string, values: Float32Array): void {
    this.grads.get(key).set(values);
    this.written.add(key);
  }
  gradToAdd(key: string, overwrite = false): Float32Array {
    const grad = this.grads.get(key);
    if (!this.written.has(key) && !overwrite) grad.fill(0);
    this.written.add(key);
    return grad;
  }
}

/** Target elements of one logits-sized tensor of a head chunk (`tokens × Vc`). */
const CHUNK_ELEMENTS = 4 * 1024 * 1024;

/**
 * A model on the native engine: its config, slots, sessions and weights. The weights may be
 * swapped (`weights`), e.g. for a frozen reference of the same shape.
 * @internal
 */
export class NativeEngine {
  readonly spec: LayerSpec;
  readonly arch: ModelArchitecture;
  readonly slots: Slot[];
  readonly layerNames: string[];
  private readonly layerShapes: Map<string, number[]>;

  private readonly chunkElements: number;

  constructor(
    readonly config: ModelConfig,
    readonly sessions: SessionCache,
    options: { chunkElements?: number } = {},
  ) {
    this.chunkElements = options.chunkElements ?? CHUNK_ELEMENTS;
    this.spec = layerSpecOf(config);
    this.arch = architectureOf(config);
    this.slots = storeSlots(config);
    this.layerNames = layerParamNames(this.spec);
    this.layerShapes = layerParamShapes(this.spec);
  }

  /** The slot holding the LM head's rows (the embedding when tied). */
  get headSlot(): string {
    return this.config.tie_word_embeddings ? 'embed' : 'head';
  }

  private runLayer(
    mode: LayerGraphMode,
    feeds: Record<string, Feed>,
    outputs: readonly string[],
  ): Record<string, Float32Array> {
    const key = `layer|${JSON.stringify(this.spec)}|${JSON.stringify(mode)}`;
    return this.sessions.run(key, () => layerGraph(this.spec, mode).model, feeds, outputs);
  }

  private runHead(mode: HeadGraphMode, feeds: Record<string, Feed>, outputs: readonly string[]) {
    const key = `head|${this.config.hidden_size}|${JSON.stringify(mode)}`;
    return this.sessions.run(
      key,
      () => headGraph(this.config.hidden_size, mode).model,
      feeds,
      outputs,
    );
  }

  /**
   * Each layer's RoPE tables (its own inverse frequencies; NoPE layers the identity) and attention
   * bias (causal within a segment, and its sliding window), computed once per distinct setting.
   */
  private layerTables(batch: TokenBatch): Record<'cos' | 'sin' | 'bias', Feed>[] {
    const { batchSize: b, seqLen: t, positions } = batch.input;
    const hd = this.spec.headDim;
    const ropes = new Map<string, { cos: Feed; sin: Feed }>();
    const biases = new Map<number | null, Feed>();
    return this.arch.layers.map((layer) => {
      let rope = ropes.get(layer.rope.id);
      if (rope === undefined) {
        const frequencies = layer.rope.kind === 'none' ? null : layer.rope.inverseFrequencies;
        const tables = ropeTablesOf(positions, hd, frequencies);
        rope = {
          cos: { data: tables.cos, dims: [b, t, 1, hd] },
          sin: { data: tables.sin, dims: [b, t, 1, hd] },
        };
        ropes.set(layer.rope.id, rope);
      }
      let bias = biases.get(layer.window);
      if (bias === undefined) {
        bias = { data: attentionBias(batch.input, layer.window), dims: [b, 1, 1, t * t] };
        biases.set(layer.window, bias);
      }
      return { ...rope, bias };
    });
  }

  /** The feeds of layer `layer`'s tensors from `weights`. */
  private layerFeeds(
    weights: SlotBuffers,
    layer: number,
    lora?: EngineLora,
    tokens = 0,
  ): Record<string, Feed> {
    const feeds: Record<string, Feed> = {};
    for (const name of this.layerNames) {
      feeds[name] = {
        data: weights.get(layerSlot(layer, name)),
        dims: this.layerShapes.get(name)!,
      };
    }
    if (lora) {
      Object.assign(feeds, lora.adapters.feeds(lora.weights, layer));
      if ((lora.layer ?? lora.adapters.layer).dropout) {
        Object.assign(feeds, lora.adapters.masks(lora.maskSeed, layer, tokens));
      }
    }
    return feeds;
  }

  /**
   * The forward of `batch` on `weights` up to the final norm's output at the loss positions
   * (`positions`: default every completion position of `batch.slots`), keeping what `keep` says.
   */
  forward(
    batch: TokenBatch,
    weights: SlotBuffers,
    keep: Keep,
    positions: Int32Array = lossPositions(batch),
    lora?: EngineLora,
  ): ForwardState {
    const { batchSize: b, seqLen: t, ids } = batch.input;
    const d = this.config.hidden_size;
    const n = b * t;
    const tables = this.layerTables(batch);
    const embed = weights.get('embed');
    let x: Float32Array = new Float32Array(n * d);
    for (let token = 0; token < n; token++) {
      const id = ids[token]!;
      x.set(embed.subarray(id * d, id * d + d), token * d);
    }
    const scale = this.arch.embeddingScale;
    if (scale !== 1) for (let i = 0; i < x.length; i++) x[i]! *= scale;
    const layers: ForwardState['layers'] = [];
    const cached = keep === 'cache';
    const mode: LayerGraphMode = {
      kind: cached ? 'forward-cache' : 'forward',
      ...(lora ? { lora: lora.layer ?? lora.adapters.layer } : {}),
    };
    const cacheNames = layerCache(this.spec);
    const outputs = cached ? ['out', ...cacheNames] : ['out'];
    for (let layer = 0; layer < this.config.num_hidden_layers; layer++) {
      const feeds = {
        x: { data: x, dims: [n, d] },
        ...tables[layer]!,
        ...this.layerFeeds(weights, layer, lora, n),
      };
      const out = this.runLayer(mode, feeds, outputs);
      if (keep !== 'none') {
        const entry: ForwardState['layers'][number] = { x };
        if (cached) entry.cache = Object.fromEntries(cacheNames.map((name) => [name, out[name]!]));
        layers.push(entry);
      }
      x = out.out!;
    }
    const selected = gatherRows(x, positions, d);
    const normMode: HeadGraphMode = {
      kind: 'final-norm',
      backward: false,
      eps: this.spec.rmsNormEps,
      offset: this.spec.normOffset,
    };
    const { h } = this.runHead(
      normMode,
      {
        x: { data: selected, dims: [positions.length, d] },
        ln: { data: weights.get('norm'), dims: [d] },
      },
      ['h'],
    );
    return { batch, tables, layers, last: x, positions, hidden: h!, ...(lora ? { lora } : {}) };
  }

  /** The vocabulary chunks `[offset, end)` for `tokens` rows. */
  private chunks(tokens: number): [number, number][] {
    const vocab = this.config.vocab_size;
    const size = Math.max(
      Math.min(256, vocab),
      Math.min(vocab, Math.floor(this.chunkElements / Math.max(tokens, 1))),
    );
    const out: [number, number][] = [];
    for (let offset = 0; offset < vocab; offset += size)
      out.push([offset, Math.min(vocab, offset + size)]);
    return out;
  }

  /** The head weight's rows `[offset, end)` as a feed (a view). */
  private headRows(weights: SlotBuffers, offset: number, end: number): Feed {
    const d = this.config.hidden_size;
    return {
      data: weights.get(this.headSlot).subarray(offset * d, end * d),
      dims: [end - offset, d],
    };
  }

  /**
   * Logprobs of the targets, entropies and log-normalizers of `softmax(logits / temperature)` at
   * the loss positions of `state` (the chunks combined in float64).
   */
  stats(state: ForwardState, weights: SlotBuffers, temperature: number): HeadStats {
    const m = state.positions.length;
    const d = this.config.hidden_size;
    const labels = targetsAt(state);
    const max = new Float64Array(m).fill(-Infinity);
    const sum = new Float64Array(m);
    const weighted = new Float64Array(m);
    const picked = new Float64Array(m);
    const h = { data: state.hidden, dims: [m, d] };
    const invT = { data: Float32Array.of(1 / temperature), dims: [] };
    for (const [offset, end] of this.chunks(m)) {
      const width = end - offset;
      const pick = new Float32Array(m);
      const inside = new Float32Array(m);
      for (let i = 0; i < m; i++) {
        const local = labels[i]! - offset;
        if (local >= 0 && local < width) {
          pick[i] = local;
          inside[i] = 1;
        }
      }
      const out = this.runHead(
        { kind: 'stats' },
        {
          h,
          w: this.headRows(weights, offset, end),
          inv_t: invT,
          pick: { data: pick, dims: [m] },
          inside: { data: inside, dims: [m] },
        },
        ['m', 's', 't', 'picked'],
      );
      for (let i = 0; i < m; i++) {
        const cm = out.m![i]!;
        if (inside[i] === 1) picked[i] = out.picked![i]!;
        // rescale the running sums to the larger max
        if (cm > max[i]!) {
          const scale = Math.exp(max[i]! - cm);
          sum[i] = sum[i]! * scale + out.s![i]!;
          weighted[i] = weighted[i]! * scale + out.t![i]!;
          max[i] = cm;
        } else {
          const scale = Math.exp(cm - max[i]!);
          sum[i] = sum[i]! + out.s![i]! * scale;
          weighted[i] = weighted[i]! + out.t![i]! * scale;
        }
      }
    }
    const logprobs = new Float32Array(m);
    const entropy = new Float32Array(m);
    const lse = new Float32Array(m);
    for (let i = 0; i < m; i++) {
      const normalizer = max[i]! + Math.log(sum[i]!);
      lse[i] = normalizer;
      logprobs[i] = picked[i]! - normalizer;
      entropy[i] = normalizer - weighted[i]! / sum[i]!;
    }
    return { logprobs, entropy, lse };
  }

  /**
   * Back-propagates the per-position head weights through the model and adds every slot's
   * gradient into `grads` (created, zero, when undefined); returns it.
   */
  backward(state: ForwardState, weights: SlotBuffers, head: HeadWeights, sink: GradSink): void {
    const m = state.positions.length;
    const labels = targetsAt(state);
    const entropy = head.entropyWeights !== undefined;
    const feedsOf = (offset: number, width: number): Record<string, Feed> => {
      const hot = new Float32Array(m);
      for (let i = 0; i < m; i++) {
        const local = labels[i]! - offset;
        hot[i] = local >= 0 && local < width ? local : width;
      }
      const feeds: Record<string, Feed> = {
        inv_t: { data: Float32Array.of(1 / head.temperature), dims: [] },
        lse: { data: head.stats.lse, dims: [m] },
        loss_w: { data: head.lossWeights, dims: [m] },
        hot: { data: hot, dims: [m] },
      };
      if (entropy) {
        feeds.ent_w = { data: head.entropyWeights!, dims: [m] };
        feeds.entropy = { data: head.stats.entropy, dims: [m] };
      }
      return feeds;
    };
    const weightGrad = state.lora === undefined;
    this.backwardFromHead(state, weights, sink, (offset, width, accumulate) => ({
      mode: { kind: 'grads', entropy, accumulate, weightGrad },
      feeds: feedsOf(offset, width),
    }));
  }

  /** The raw logits `[M, V]` (temperature 1) at the loss positions of `state`. */
  logits(state: ForwardState, weights: SlotBuffers): Float32Array {
    const m = state.positions.length;
    const d = this.config.hidden_size;
    const vocab = this.config.vocab_size;
    const out = new Float32Array(m * vocab);
    for (const [offset, end] of this.chunks(m)) {
      const width = end - offset;
      const { logits } = this.runHead(
        { kind: 'logits' },
        { h: { data: state.hidden, dims: [m, d] }, w: this.headRows(weights, offset, end) },
        ['logits'],
      );
      for (let i = 0; i < m; i++) {
        out.set(logits!.subarray(i * width, (i + 1) * width), i * vocab + offset);
      }
    }
    return out;
  }

  /** {@link NativeEngine.backward} from a given d loss / d logits `[M, V]` (raw logits). */
  backwardLogits(
    state: ForwardState,
    weights: SlotBuffers,
    dLogits: Float32Array,
    sink: GradSink,
  ): void {
    const m = state.positions.length;
    const vocab = this.config.vocab_size;
    this.backwardFromHead(state, weights, sink, (offset, width, accumulate) => {
      const chunk = new Float32Array(m * width);
      for (let i = 0; i < m; i++) {
        chunk.set(dLogits.subarray(i * vocab + offset, i * vocab + offset + width), i * width);
      }
      return {
        mode: { kind: 'dlogits', accumulate, weightGrad: state.lora === undefined },
        feeds: { d_logits: { data: chunk, dims: [m, width] } },
      };
    });
  }

  /** The head chunks' backward (`chunkOf` gives each chunk's graph and extra feeds), then the rest. */
  private backwardFromHead(
    state: ForwardState,
    weights: SlotBuffers,
    sink: GradSink,
    chunkOf: (
      offset: number,
      width: number,
      accumulate: boolean,
    ) => { mode: HeadGraphMode; feeds: Record<string, Feed> },
  ): void {
    const m = state.positions.length;
    const d = this.config.hidden_size;
    // LoRA trains the adapters only: the head, the norms and the embedding are frozen
    const trainBase = state.lora === undefined;
    // the chunks cover the head's rows once: the first write of a step is a copy, not an add
    const fresh = trainBase && !sink.hasGrad(this.headSlot);
    const headGrad = trainBase ? sink.gradToAdd(this.headSlot, fresh) : undefined;
    let dh: Float32Array | undefined;
    for (const [offset, end] of this.chunks(m)) {
      const { mode, feeds } = chunkOf(offset, end - offset, dh !== undefined);
      const result = this.runHead(
        mode,
        {
          h: { data: state.hidden, dims: [m, d] },
          w: this.headRows(weights, offset, end),
          ...feeds,
          ...(dh ? { acc_dh: { data: dh, dims: [m, d] } } : {}),
        },
        trainBase ? ['g_w', 'dh'] : ['dh'],
      );
      if (headGrad && fresh) headGrad.set(result.g_w!, offset * d);
      else if (headGrad) addInto(headGrad, result.g_w!, offset * d);
      dh = result.dh!;
    }
    // the final norm's backward on the loss positions, then scattered into [N, d]
    const selected = gatherRows(state.last, state.positions, d);
    const norm = this.runHead(
      {
        kind: 'final-norm',
        backward: true,
        eps: this.spec.rmsNormEps,
        offset: this.spec.normOffset,
      },
      {
        x: { data: selected, dims: [m, d] },
        ln: { data: weights.get('norm'), dims: [d] },
        d_h: { data: dh!, dims: [m, d] },
      },
      ['dx', 'g_ln'],
    );
    if (trainBase) addInto(sink.gradToAdd('norm'), norm.g_ln!, 0);
    const { batchSize: b, seqLen: t } = state.batch.input;
    const n = b * t;
    let dx: Float32Array = new Float32Array(n * d);
    scatterRows(dx, norm.dx!, state.positions, d);
    for (let layer = this.config.num_hidden_layers - 1; layer >= 0; layer--) {
      dx = this.layerBackward(state, weights, layer, dx, sink);
    }
    if (!trainBase) return;
    // the embedding's gradient: a scatter-add of d x over the token ids (in order: deterministic)
    const embedGrad = sink.gradToAdd('embed');
    const ids = state.batch.input.ids;
    // x = embed[id] · scale (Gemma 3: √hidden): d embed[id] += scale · d x
    const scale = this.arch.embeddingScale;
    for (let token = 0; token < n; token++) {
      const row = ids[token]! * d;
      const source = token * d;
      if (scale === 1) for (let j = 0; j < d; j++) embedGrad[row + j]! += dx[source + j]!;
      else for (let j = 0; j < d; j++) embedGrad[row + j]! += scale * dx[source + j]!;
    }
  }

  /** One layer's backward: d of its input; its gradients (or its adapters') set into `sink`. */
  private layerBackward(
    state: ForwardState,
    weights: SlotBuffers,
    layer: number,
    dOut: Float32Array,
    sink: GradSink,
  ): Float32Array {
    const saved = state.layers[layer]!;
    const d = this.config.hidden_size;
    const n = saved.x.length / d;
    const { lora } = state;
    const layerLora = lora ? (lora.layer ?? lora.adapters.layer) : undefined;
    const names = gradientNames(this.spec, layerLora);
    // the store slot of each gradient output (`lora_q_a` → `lora.<layer>.q.a`)
    const slotOf = (name: string) => {
      if (!lora) return layerSlot(layer, name);
      const [, module, which] = name.split('_') as [string, LoraModule, 'a' | 'b'];
      return loraSlot(layer, module, which);
    };
    const shapeOf = (name: string) => {
      if (!lora) return this.layerShapes.get(name)!;
      return lora.adapters.slots.find((slot) => slot.key === slotOf(name))!.shape;
    };
    const accumulate = sink.hasGrad(slotOf(names[0]!));
    const mode: LayerGraphMode = {
      kind: 'backward',
      recompute: saved.cache === undefined,
      accumulate,
      ...(layerLora ? { lora: layerLora } : {}),
    };
    const feeds: Record<string, Feed> = {
      x: { data: saved.x, dims: [n, d] },
      d_out: { data: dOut, dims: [n, d] },
      ...state.tables[layer]!,
      ...this.layerFeeds(weights, layer, lora, n),
    };
    if (saved.cache) {
      const dims = cacheShapes(this.spec, state.batch);
      for (const name of layerCache(this.spec)) {
        feeds[name] = { data: saved.cache[name]!, dims: dims[name]! };
      }
    }
    if (accumulate) {
      for (const name of names) {
        feeds[`acc_${name}`] = { data: sink.grads.get(slotOf(name)), dims: shapeOf(name) };
      }
    }
    const out = this.runLayer(mode, feeds, ['dx', ...names.map((name) => `g_${name}`)]);
    for (const name of names) sink.setGrad(slotOf(name), out[`g_${name}`]!);
    return out.dx!;
  }
}

/** The cache tensors' shapes of a batch. */
function cacheShapes(spec: LayerSpec, batch: TokenBatch): Record<string, number[]> {
  const { batchSize: b, seqLen: t } = batch.input;
  const n = b * t;
  const g = spec.heads / spec.kvHeads;
  const hd = spec.headDim;
  return {
    x2: [n, spec.hidden],
    q: [b, spec.kvHeads, g * t, hd],
    k: [b, spec.kvHeads, t, hd],
    v: [b, spec.kvHeads, t, hd],
    p: [b, spec.kvHeads, g * t, t],
    o: [n, spec.heads * hd],
    gate: [n, spec.ffn],
    up: [n, spec.ffn],
    q_raw: [n, spec.heads * hd],
    k_raw: [n, spec.kvHeads * hd],
    a_raw: [n, spec.hidden],
    m_raw: [n, spec.hidden],
  };
}

/** Every completion position of a batch (sequence order, then token order). @internal */
export function lossPositions(batch: TokenBatch): Int32Array {
  const total = batch.slots.reduce((sum, slots) => sum + slots.length, 0);
  const out = new Int32Array(total);
  let index = 0;
  for (const slots of batch.slots) {
    out.set(slots, index);
    index += slots.length;
  }
  return out;
}

/** The targets at a forward's loss positions. */
function targetsAt(state: ForwardState): Int32Array {
  return Int32Array.from(state.positions, (position) => state.batch.targets[position]!);
}

function gatherRows(x: Float32Array, positions: Int32Array, d: number): Float32Array {
  const out = new Float32Array(positions.length * d);
  positions.forEach((position, i) => {
    out.set(x.subarray(position * d, position * d + d), i * d);
  });
  return out;
}

function scatterRows(target: Float32Array, rows: Float32Array, positions: Int32Array, d: number) {
  positions.forEach((position, i) => {
    const base = position * d;
    for (let j = 0; j < d; j++) target[base + j]! += rows[i * d + j]!;
  });
}

function addInto(target: Float32Array, values: Float32Array, offset: number): void {
  for (let i = 0; i < values.length; i++) target[offset + i]! += values[i]!;
}

export { storeSlots };
