import { ErrorCode, RlvrError } from '@rlvr/core';
import type * as Ort from 'onnxruntime-node';
import type { ResolvedLogitsOptions } from '../generation/logits-processors.js';
import {
  createMatchingSession,
  graphError,
  openWrapped,
  type SessionSettings,
} from '../onnx/ort.js';
import { LOOP_IO, type WeightInput } from './loop-graph.js';

/** Where each weight input lives in one flat float32 array (offsets in floats). @internal */
export type WeightLayout = (WeightInput & { offset: number; length: number })[];

/** The weights of a graph built with weight inputs: their layout and values. @internal */
export type BoundWeights = { layout: WeightLayout; data: Float32Array };

/** Lays weight inputs out one after the other in a flat array. @internal */
export function layoutWeights(inputs: readonly WeightInput[]): WeightLayout {
  let offset = 0;
  return inputs.map(({ name, dims }) => {
    const length = dims.reduce((product, dim) => product * dim, 1);
    const entry = { name, dims: [...dims], offset, length };
    offset += length;
    return entry;
  });
}

/**
 * Tokens sorted for top-p: the best 64, else the best 1024, else the whole list (when some row's
 * nucleus is longer). @internal
 */
export const SORT_TIERS: readonly [number, number] = [64, 1024];

/** The shapes of a loop graph, read from the session's metadata. @internal */
export type LoopLayout = {
  numLayers: number;
  numKvHeads: number;
  headDim: number;
  vocabSize: number;
};

/** What one call returns: `[rows, steps]` tokens, behaviour and model logprobs. @internal */
export type ChunkResult = {
  steps: number;
  tokens: BigInt64Array;
  logprobs: Float32Array;
  modelLogprobs: Float32Array;
  /** `[rows, steps, k]` top-k logprobs of the model distribution and their ids (k = `topLogprobs`). */
  topValues: Float32Array;
  topIds: BigInt64Array;
};

/** Per-request sampling settings, fed to every call. @internal */
export type LoopSampling = ResolvedLogitsOptions & { modelLogprobs: boolean; topLogprobs?: number };

function readLoopLayout(session: Ort.InferenceSession): LoopLayout {
  const inputs = new Map(session.inputMetadata.map((meta) => [meta.name, meta]));
  const past = inputs.get(LOOP_IO.past(0, 'key'));
  const seen = inputs.get(LOOP_IO.inputs.seen);
  if (!past?.isTensor || !seen?.isTensor || !inputs.has(LOOP_IO.inputs.uniforms)) {
    throw graphError(
      `the ONNX graph is not a rollout loop graph (inputs: ${session.inputNames.join(', ')})`,
    );
  }
  let numLayers = 0;
  while (inputs.has(LOOP_IO.past(numLayers, 'key'))) numLayers++;
  const [numKvHeads, headDim, vocabSize] = [past.shape[1], past.shape[3], seen.shape[1]];
  if (
    typeof numKvHeads !== 'number' ||
    typeof headDim !== 'number' ||
    typeof vocabSize !== 'number'
  ) {
    throw graphError('the loop graph must have static KV heads, head size and vocabulary size');
  }
  return { numLayers, numKvHeads, headDim, vocabSize };
}

/**
 * Drives the loop graph of `buildLoopGraph`: each call feeds the prompts (first call) or the last
 * sampled token of every row, and samples `steps` tokens per row in-graph. The KV cache goes back
 * and forth once per call, not once per token.
 * @internal
 */
export class LoopDecoder {
  readonly layout: LoopLayout;
  readonly vocabSize: number;
  private readonly ort: typeof Ort;
  private session: Ort.InferenceSession;
  private past: Ort.Tensor[] = [];
  /** Attention mask of the cache, `[rows, length]`. */
  private mask = new Uint8Array(0);
  /** Position of the next token to feed, per row. */
  private positions: number[] = [];
  private rows = 0;
  private length = 0;
  /** Sizes of the partial sorts tried before a full sort for top-p (tests lower them). */
  sortTiers: readonly [number, number] = SORT_TIERS;
  /** Rows kept for the next call (`keepRows`), or undefined for all. */
  private kept: number[] | undefined;
  /** The weight inputs fed to every run: tensors over `weightData`, created once per session. */
  private weightFeeds: Record<string, Ort.Tensor> = {};
  /** The values behind {@link weightFeeds} (the session reads them in place on every run). */
  private weightData: Float32Array | undefined;

  private constructor(ort: typeof Ort, session: Ort.InferenceSession, weights?: BoundWeights) {
    this.ort = ort;
    this.session = session;
    this.layout = readLoopLayout(session);
    this.vocabSize = this.layout.vocabSize;
    this.bindWeights(session, weights);
  }

  /**
   * Checks that `session` takes exactly the weight inputs of `weights` (or none when `weights` is
   * not given) and makes them the weights fed to every run.
   */
  private bindWeights(session: Ort.InferenceSession, weights: BoundWeights | undefined): void {
    const known = new Set<string>(Object.values(LOOP_IO.inputs));
    const expected = session.inputNames.filter(
      (name) => !known.has(name) && !name.startsWith('past_key_values.'),
    );
    const feeds: Record<string, Ort.Tensor> = {};
    let bound: Float32Array | undefined;
    if (weights) {
      const names = new Set(weights.layout.map((entry) => entry.name));
      if (expected.length !== names.size || expected.some((name) => !names.has(name))) {
        throw graphError(
          `the loop graph's weight inputs (${expected.join(', ')}) are not the weights given`,
        );
      }
      // onnxruntime-node reads a tensor's ArrayBuffer in place; it refuses SharedArrayBuffers
      bound =
        weights.data.buffer instanceof ArrayBuffer ? weights.data : new Float32Array(weights.data);
      for (const { name, dims, offset, length } of weights.layout) {
        feeds[name] = new this.ort.Tensor('float32', bound.subarray(offset, offset + length), dims);
      }
    } else if (expected.length > 0) {
      throw graphError('the loop graph takes its weights as inputs: bind them when opening it');
    }
    this.weightData = bound;
    this.weightFeeds = feeds;
  }

  /**
   * Creates a decoder for loop-graph bytes. A graph built with weight inputs needs `weights`: the
   * session reads `weights.data` in place on every run (copied once first when it is backed by a
   * SharedArrayBuffer, which onnxruntime-node does not accept).
   */
  static async create(
    model: Uint8Array | string,
    settings: SessionSettings,
    weights?: BoundWeights,
  ): Promise<LoopDecoder> {
    return openWrapped(model, settings, (ort, session) => new LoopDecoder(ort, session, weights));
  }

  /** True when the weights are graph inputs that {@link writeWeights} can overwrite in place. */
  get inPlaceWeights(): boolean {
    return this.weightData !== undefined;
  }

  /**
   * Overwrites the weights the session reads (same layout as when opened): the next run uses them.
   * Must not be called while a run is in flight.
   */
  writeWeights(data: Float32Array): void {
    if (!this.weightData) throw graphError('this loop graph has its weights built in');
    if (data !== this.weightData) this.weightData.set(data);
  }

  /**
   * Replaces the session (after a weight update); the new graph must have the same layout. A graph
   * built with weight inputs needs `weights` (as in {@link LoopDecoder.create}), so a decoder can
   * move from a graph with its weights built in to one that takes them as inputs.
   */
  async replaceSession(
    model: Uint8Array | string,
    settings: SessionSettings,
    weights?: BoundWeights,
  ): Promise<void> {
    const session = await createMatchingSession(
      model,
      settings,
      readLoopLayout,
      this.layout,
      'loop graph',
    );
    try {
      this.bindWeights(session, weights);
    } catch (error) {
      await session.release();
      throw error;
    }
    const old = this.session;
    this.session = session;
    this.past = [];
    await old.release();
  }

  async release(): Promise<void> {
    this.past = [];
    await this.session.release();
  }

  private int64(values: ArrayLike<number>, dims: number[]): Ort.Tensor {
    const data = new BigInt64Array(values.length);
    for (let index = 0; index < values.length; index++) data[index] = BigInt(values[index]!);
    return new this.ort.Tensor('int64', data, dims);
  }

  private scalars(sampling: LoopSampling): Record<string, Ort.Tensor> {
    const { Tensor } = this.ort;
    const io = LOOP_IO.inputs;
    const vocab = this.vocabSize;
    const listSize = sampling.topK > 0 && sampling.topK < vocab ? sampling.topK : vocab;
    const scalarF = (value: number) => new Tensor('float32', Float32Array.of(value), []);
    const scalarB = (value: boolean) => new Tensor('bool', Uint8Array.of(value ? 1 : 0), []);
    const scalarI = (value: number) => new Tensor('int64', BigInt64Array.of(BigInt(value)), []);
    return {
      [io.temperature]: scalarF(sampling.temperature > 0 ? 1 / sampling.temperature : 1),
      [io.greedy]: scalarB(sampling.temperature === 0),
      [io.filter]: scalarB(listSize < vocab || sampling.topP < 1),
      [io.listSize]: scalarI(listSize),
      [io.cheapSize]: scalarI(Math.min(listSize, this.sortTiers[0])),
      [io.middleSize]: scalarI(Math.min(listSize, this.sortTiers[1])),
      [io.topP]: scalarF(sampling.topP),
      [io.minP]: scalarF(sampling.minP),
      [io.useMinP]: scalarB(sampling.minP > 0),
      [io.penalty]: scalarF(sampling.repetitionPenalty),
      [io.usePenalty]: scalarB(sampling.repetitionPenalty !== 1),
      [io.modelLogprobs]: scalarB(sampling.modelLogprobs),
      [io.topLogprobs]: scalarI(sampling.topLogprobs ?? 0),
    };
  }

  private async run(feeds: Record<string, Ort.Tensor>, rows: number, steps: number) {
    let outputs: Ort.InferenceSession.ReturnType;
    try {
      outputs = await this.session.run(feeds);
    } catch (error) {
      throw new RlvrError(
        ErrorCode.MODEL_LOAD_FAILED,
        `onnxruntime failed to run the loop graph: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
    const out = LOOP_IO.outputs;
    this.past = [];
    for (let layer = 0; layer < this.layout.numLayers; layer++) {
      this.past.push(
        outputs[LOOP_IO.present(layer, 'key')]!,
        outputs[LOOP_IO.present(layer, 'value')]!,
      );
    }
    this.rows = rows;
    return {
      steps,
      tokens: outputs[out.tokens]!.data as BigInt64Array,
      logprobs: outputs[out.logprobs]!.data as Float32Array,
      modelLogprobs: outputs[out.modelLogprobs]!.data as Float32Array,
      topValues: outputs[out.topValues]!.data as Float32Array,
      topIds: outputs[out.topIds]!.data as BigInt64Array,
    };
  }

  /**
   * Runs the distinct prompts (left-padded) and samples `steps` tokens for each of `copies[i]` rows
   * per prompt `i` (rows in prompt order), with `uniforms` `[rows, steps]` and, for the repetition
   * penalty, `seen` `[rows, vocab]` (1 = seen).
   */
  async start(
    prompts: readonly (readonly number[])[],
    copies: readonly number[],
    uniforms: Float32Array,
    sampling: LoopSampling,
    seen?: Uint8Array,
  ): Promise<ChunkResult> {
    const { numLayers, numKvHeads, headDim } = this.layout;
    const batch = prompts.length;
    const length = Math.max(...prompts.map((prompt) => prompt.length));
    const ids = new Array<number>(batch * length).fill(0);
    const mask = new Array<number>(batch * length).fill(0);
    const positionIds = new Array<number>(batch * length).fill(0);
    prompts.forEach((prompt, row) => {
      const pad = length - prompt.length;
      prompt.forEach((token, column) => {
        ids[row * length + pad + column] = token;
        mask[row * length + pad + column] = 1;
        positionIds[row * length + pad + column] = column;
      });
    });
    const source: number[] = [];
    copies.forEach((count, prompt) => {
      for (let copy = 0; copy < count; copy++) source.push(prompt);
    });
    const rows = source.length;
    const steps = uniforms.length / rows;
    const io = LOOP_IO.inputs;
    const feeds: Record<string, Ort.Tensor> = {
      ...this.weightFeeds,
      ...this.scalars(sampling),
      [io.inputIds]: this.int64(ids, [batch, length]),
      [io.attentionMask]: this.int64(mask, [batch, length]),
      [io.positionIds]: this.int64(positionIds, [batch, length]),
      [io.rows]: this.int64(source, [rows]),
      [io.uniforms]: new this.ort.Tensor('float32', uniforms, [rows, steps]),
      [io.seen]: this.seenTensor(rows, seen),
    };
    const empty = new Float32Array(0);
    for (let layer = 0; layer < numLayers; layer++) {
      for (const kind of ['key', 'value'] as const) {
        feeds[LOOP_IO.past(layer, kind)] = new this.ort.Tensor('float32', empty, [
          batch,
          numKvHeads,
          0,
          headDim,
        ]);
      }
    }
    const result = await this.run(feeds, rows, steps);
    this.length = length + steps - 1;
    this.mask = new Uint8Array(rows * this.length);
    this.positions = [];
    source.forEach((prompt, row) => {
      const pad = length - prompts[prompt]!.length;
      this.mask.fill(1, row * this.length + pad, (row + 1) * this.length);
      this.positions.push(prompts[prompt]!.length + steps - 1);
    });
    this.kept = undefined;
    return result;
  }

  /**
   * Feeds the last sampled token of every current row and samples `steps` more per row (of the
   * rows kept by {@link keepRows}, if called), with `uniforms` `[rows, steps]`.
   */
  async next(
    tokens: ArrayLike<number>,
    uniforms: Float32Array,
    sampling: LoopSampling,
    seen?: Uint8Array,
  ): Promise<ChunkResult> {
    const previous = this.rows;
    const length = this.length + 1;
    const mask = new BigInt64Array(previous * length);
    for (let row = 0; row < previous; row++) {
      for (let column = 0; column < this.length; column++)
        mask[row * length + column] = BigInt(this.mask[row * this.length + column]!);
      mask[row * length + length - 1] = 1n;
    }
    const kept = this.kept ?? Array.from({ length: previous }, (_, row) => row);
    const rows = kept.length;
    const steps = uniforms.length / rows;
    const io = LOOP_IO.inputs;
    const feeds: Record<string, Ort.Tensor> = {
      ...this.weightFeeds,
      ...this.scalars(sampling),
      [io.inputIds]: this.int64(tokens, [previous, 1]),
      [io.attentionMask]: new this.ort.Tensor('int64', mask, [previous, length]),
      [io.positionIds]: this.int64(this.positions, [previous, 1]),
      [io.rows]: this.int64(kept, [rows]),
      [io.uniforms]: new this.ort.Tensor('float32', uniforms, [rows, steps]),
      [io.seen]: this.seenTensor(rows, seen),
    };
    for (let layer = 0; layer < this.layout.numLayers; layer++) {
      feeds[LOOP_IO.past(layer, 'key')] = this.past[2 * layer]!;
      feeds[LOOP_IO.past(layer, 'value')] = this.past[2 * layer + 1]!;
    }
    const result = await this.run(feeds, rows, steps);
    const nextLength = length + steps - 1;
    const nextMask = new Uint8Array(rows * nextLength);
    kept.forEach((row, index) => {
      nextMask.set(
        this.mask.subarray(row * this.length, (row + 1) * this.length),
        index * nextLength,
      );
      nextMask.fill(1, index * nextLength + this.length, (index + 1) * nextLength);
    });
    this.mask = nextMask;
    this.length = nextLength;
    this.positions = kept.map((row) => this.positions[row]! + steps);
    this.kept = undefined;
    return result;
  }

  /**
   * Multi-turn: feeds a chunk per current row (the last sampled token and the environment's tokens;
   * left-padded to the longest with masked holes, positions continuing each row's own) and samples
   * `steps` tokens per row. `hold` rows feed a masked placeholder: what the call samples for them is
   * masked out afterwards and their position does not move. Rows kept by {@link keepRows} only.
   */
  async feed(
    chunks: readonly (readonly number[])[],
    hold: readonly boolean[],
    uniforms: Float32Array,
    sampling: LoopSampling,
  ): Promise<ChunkResult> {
    const previous = this.rows;
    const width = Math.max(1, ...chunks.map((chunk) => chunk.length));
    const length = this.length + width;
    const ids = new Array<number>(previous * width).fill(0);
    const positionIds = new Array<number>(previous * width).fill(0);
    const mask = new BigInt64Array(previous * length);
    const fed = new Uint8Array(previous * width);
    for (let row = 0; row < previous; row++) {
      for (let column = 0; column < this.length; column++)
        mask[row * length + column] = BigInt(this.mask[row * this.length + column]!);
      if (hold[row]) continue;
      const chunk = chunks[row]!;
      const pad = width - chunk.length;
      chunk.forEach((token, column) => {
        ids[row * width + pad + column] = token;
        positionIds[row * width + pad + column] = this.positions[row]! + column;
        mask[row * length + this.length + pad + column] = 1n;
        fed[row * width + pad + column] = 1;
      });
    }
    const kept = this.kept ?? Array.from({ length: previous }, (_, row) => row);
    const rows = kept.length;
    const steps = uniforms.length / rows;
    const io = LOOP_IO.inputs;
    const feeds: Record<string, Ort.Tensor> = {
      ...this.weightFeeds,
      ...this.scalars(sampling),
      [io.inputIds]: this.int64(ids, [previous, width]),
      [io.attentionMask]: new this.ort.Tensor('int64', mask, [previous, length]),
      [io.positionIds]: this.int64(positionIds, [previous, width]),
      [io.rows]: this.int64(kept, [rows]),
      [io.uniforms]: new this.ort.Tensor('float32', uniforms, [rows, steps]),
      [io.seen]: this.seenTensor(rows, undefined),
    };
    for (let layer = 0; layer < this.layout.numLayers; layer++) {
      feeds[LOOP_IO.past(layer, 'key')] = this.past[2 * layer]!;
      feeds[LOOP_IO.past(layer, 'value')] = this.past[2 * layer + 1]!;
    }
    const result = await this.run(feeds, rows, steps);
    const nextLength = length + steps - 1;
    const nextMask = new Uint8Array(rows * nextLength);
    kept.forEach((row, index) => {
      const base = index * nextLength;
      nextMask.set(this.mask.subarray(row * this.length, (row + 1) * this.length), base);
      nextMask.set(fed.subarray(row * width, (row + 1) * width), base + this.length);
      if (!hold[row]) nextMask.fill(1, base + length, base + nextLength);
    });
    this.positions = kept.map((row) =>
      hold[row] ? this.positions[row]! : this.positions[row]! + chunks[row]!.length - 1 + steps,
    );
    this.mask = nextMask;
    this.length = nextLength;
    this.kept = undefined;
    return result;
  }

  /**
   * Multi-turn: row `row` used only part of the last call's tokens — the last `unused` cache
   * entries of that call belong to tokens after its turn ended: mask them and move its position back.
   */
  rewind(row: number, unused: number): void {
    if (unused <= 0) return;
    const end = (row + 1) * this.length;
    this.mask.fill(0, end - unused, end);
    this.positions[row]! -= unused;
  }

  /** Keeps only the given rows (ascending indices into the current rows) from the next call on. */
  keepRows(rows: readonly number[]): void {
    this.kept = [...rows];
  }

  private seenTensor(rows: number, seen: Uint8Array | undefined): Ort.Tensor {
    return seen
      ? new this.ort.Tensor('bool', seen, [rows, this.vocabSize])
      : new this.ort.Tensor('bool', new Uint8Array(this.vocabSize), [1, this.vocabSize]);
  }
}
