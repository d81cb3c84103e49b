import {
  type Checkpoint,
  createLlamaLayers,
  OnnxDataType as DataType,
  GraphBuilder,
  type LlamaLayers,
  MASK_VALUE,
  type ModelConfig,
  type OnnxGraph,
  type OnnxValueInfo,
  validateCheckpoint,
  valueInfo,
} from '@rlvr/model';
import { emitSample, type Sampling } from './loop-sampling.js';
import { emitTopLogprobColumns, emitTopLogprobs } from './loop-top-logprobs.js';
import { windowBiases } from './loop-window.js';

/** ONNX opset of the loop graph (plain ai.onnx ops only). @internal */
export const LOOP_OPSET = 17;
const IR_VERSION = 8;

/**
 * Input and output names of the loop graph (see {@link buildLoopGraph}).
 * @internal
 */
export const LOOP_IO = {
  inputs: {
    inputIds: 'input_ids',
    attentionMask: 'attention_mask',
    positionIds: 'position_ids',
    rows: 'rows',
    uniforms: 'uniforms',
    seen: 'seen',
    temperature: 'inv_temperature',
    greedy: 'greedy',
    filter: 'filter',
    listSize: 'list_size',
    cheapSize: 'cheap_size',
    middleSize: 'middle_size',
    topP: 'top_p',
    minP: 'min_p',
    useMinP: 'use_min_p',
    penalty: 'repetition_penalty',
    usePenalty: 'use_penalty',
    modelLogprobs: 'want_model_logprobs',
    topLogprobs: 'top_logprobs',
  },
  outputs: {
    tokens: 'tokens',
    logprobs: 'logprobs',
    modelLogprobs: 'model_logprobs',
    topValues: 'top_logprob_values',
    topIds: 'top_logprob_ids',
  },
  past: (layer: number, kind: 'key' | 'value') => `past_key_values.${layer}.${kind}`,
  present: (layer: number, kind: 'key' | 'value') => `present.${layer}.${kind}`,
} as const;

/** What every part of the loop graph is built with. */
type LoopContext = {
  g: GraphBuilder;
  llama: LlamaLayers;
  config: ModelConfig;
  mergedShape: string;
  /** Reshape targets `[B, S, count, D]` for `[B·S, count·D]` rows, from `batchBySeq` `[B, S]`. */
  headsShapes: (b: GraphBuilder, batchBySeq: string) => (count: number) => string;
  /** The uniforms of step `step` (int64 `[1]`), `[R, 1]`. */
  uniformAt: (b: GraphBuilder, step: string) => string;
};

/** What the first step hands to the loop. */
type FirstStep = {
  token: string;
  logprob: string;
  modelLogprob: string;
  /** Top-k logprobs of the model distribution (values, ids), `[R, k]`. */
  top: [string, string];
  seen: string;
  /** The cache of the output rows after the first step, fixed during the loop. */
  rowPast: [string, string][];
  /** Attention mask of the output rows (bool `[R, T]`). */
  rowMask: string;
  /** Position of the first token fed to the loop, `[R, 1]`. */
  position: string;
};

const io = LOOP_IO.inputs;

/** The sampling inputs, by name. */
const SAMPLING: Sampling = {
  invTemperature: io.temperature,
  greedy: io.greedy,
  filter: io.filter,
  listSize: io.listSize,
  cheapSize: io.cheapSize,
  middleSize: io.middleSize,
  topP: io.topP,
  minP: io.minP,
  useMinP: io.useMinP,
  penalty: io.penalty,
  usePenalty: io.usePenalty,
  modelLogprobs: io.modelLogprobs,
};

/** The first step: S tokens per input row after the past cache, then one token per output row. */
function emitFirstStep(context: LoopContext): FirstStep {
  const { g, llama, mergedShape } = context;
  const hidden = context.config.hidden_size;
  const idsShape = g.op('Shape', [io.inputIds]);
  const embedded = g.op('Reshape', [llama.embed(g, io.inputIds), g.int64([-1, hidden])]);
  const seqLength = g.op('Gather', [idsShape, g.int64([1])], { axis: 0 });
  // one causal + padding bias [P,1,1,S,T] per distinct window (null: global layers)
  const biases = new Map<number | null, string>();
  const biasOf = (window: number | null) => {
    let bias = biases.get(window);
    if (bias === undefined) {
      bias = llama.attentionBias(g, io.inputIds, io.attentionMask, window);
      biases.set(window, bias);
    }
    return bias;
  };
  const maskBool = g.op('Cast', [io.attentionMask], { to: DataType.BOOL });
  const presents: [string, string][] = [];
  const state = llama.decoderLayers(g, embedded, {
    positionIds: io.positionIds,
    headsShape: context.headsShapes(g, idsShape),
    attend: (layer, q, k, v) => {
      const presentK = g.op('Concat', [LOOP_IO.past(layer, 'key'), k], { axis: 2 });
      const presentV = g.op('Concat', [LOOP_IO.past(layer, 'value'), v], { axis: 2 });
      presents.push([presentK, presentV]);
      const keys = llama.prepareKeys(g, presentK);
      const values = llama.prepareValues(g, presentV);
      const bias = biasOf(llama.architecture.layers[layer]?.window ?? null);
      return llama.mergeHeads(g, llama.attention(g, q, [{ keys, values, bias }]), mergedShape);
    },
  });
  const lastIndex = g.op('Sub', [seqLength, g.int64([1])]);
  // last position of each input row ([P, 1, hidden]), copied to the output rows
  const lastState = g.op(
    'Gather',
    [
      g.op('Reshape', [state, g.op('Concat', [idsShape, g.int64([hidden])], { axis: 0 })]),
      lastIndex,
    ],
    { axis: 1 },
  );
  const rowState = g.op('Reshape', [
    g.op('Gather', [lastState, io.rows], { axis: 0 }),
    g.int64([-1, hidden]),
  ]);
  const logits = llama.logits(g, rowState);
  const [token, logprob, modelLogprob, seen] = emitSample(
    g,
    logits,
    context.uniformAt(g, g.int64([0])),
    io.seen,
    SAMPLING,
    context.config.vocab_size,
  );
  const rowPast = presents.map(([key, value]): [string, string] => [
    g.op('Gather', [key, io.rows], { axis: 0 }),
    g.op('Gather', [value, io.rows], { axis: 0 }),
  ]);
  const lastPosition = g.op('Gather', [io.positionIds, lastIndex], { axis: 1 });
  const position = g.op('Add', [
    g.op('Gather', [lastPosition, io.rows], { axis: 0 }),
    g.int64([1]),
  ]);
  const rowMask = g.op('Gather', [maskBool, io.rows], { axis: 0 });
  const top = emitTopLogprobs(g, g, logits, io.topLogprobs);
  return { token, logprob, modelLogprob, top, seen, rowPast, rowMask, position };
}

/**
 * The `Loop` body: feeds each row's last token, attends over the fixed cache of the call and the
 * tokens of this call under one softmax, samples the next token. Returns the body graph.
 */
function emitLoopBody(context: LoopContext, first: FirstStep): OnnxGraph {
  const { g, llama, mergedShape } = context;
  const { hidden_size: hidden, num_key_value_heads: kvHeads, head_dim: headDim } = context.config;
  const layers = context.config.num_hidden_layers;
  const body = g.child();
  const iteration = body.fresh('iteration');
  const condIn = body.fresh('cond_in');
  const tokenIn = body.fresh('token_in');
  const positionIn = body.fresh('position_in');
  const seenIn = body.fresh('seen_in');
  const recentIn = Array.from({ length: layers }, () => [
    body.fresh('recent_key_in'),
    body.fresh('recent_value_in'),
  ]);
  // the fixed cache, prepared once outside the body
  const pastBias = g.op('Unsqueeze', [
    g.op('Where', [first.rowMask, g.float([0]), g.float([MASK_VALUE])]),
    g.int64([1, 2, 3]),
  ]); // [R,1,1,1,T]
  const pastKeys = first.rowPast.map(([key]) => llama.prepareKeys(g, key));
  const pastValues = first.rowPast.map(([, value]) => llama.prepareValues(g, value));
  const rowCount = body.op('Gather', [body.op('Shape', [tokenIn]), g.int64([0])], { axis: 0 });
  const rowBySeq = body.op('Concat', [rowCount, g.int64([1])], { axis: 0 }); // [R, 1]
  const embedded = body.op('Reshape', [llama.embed(body, tokenIn), g.int64([-1, hidden])]);
  const pastLength = body.op('Gather', [body.op('Shape', [first.rowMask]), g.int64([1])], {
    axis: 0,
  });
  const windows = windowBiases(context.g, body, first.rowMask, pastBias, iteration);
  const recentOut: string[][] = [];
  const state = llama.decoderLayers(body, embedded, {
    positionIds: positionIn,
    headsShape: context.headsShapes(body, rowBySeq),
    attend: (layer, q, k, v) => {
      const recentK = body.op('Concat', [recentIn[layer]![0]!, k], { axis: 2 });
      const recentV = body.op('Concat', [recentIn[layer]![1]!, v], { axis: 2 });
      recentOut.push([recentK, recentV]);
      const window = llama.architecture.layers[layer]?.window ?? null;
      const [past, recent] = window === null ? [pastBias, undefined] : windows(window);
      const blocks = [
        { keys: pastKeys[layer]!, values: pastValues[layer]!, bias: past },
        {
          keys: llama.prepareKeys(body, recentK),
          values: llama.prepareValues(body, recentV),
          ...(recent === undefined ? {} : { bias: recent }),
        },
      ] as const;
      return llama.mergeHeads(body, llama.attention(body, q, [...blocks], pastLength), mergedShape);
    },
  });
  const bodyLogits = llama.logits(body, state);
  const top = emitTopLogprobs(g, body, bodyLogits, io.topLogprobs);
  const [token, logprob, modelLogprob, seen] = emitSample(
    body,
    bodyLogits,
    context.uniformAt(body, body.op('Add', [iteration, g.int64([1])])),
    seenIn,
    SAMPLING,
    context.config.vocab_size,
  );
  // The recent cache grows by one position per iteration: its input and output lengths must be
  // different symbolic dims, or ORT may plan to reuse the input buffer for the longer output
  // ("Shape mismatch attempting to re-use buffer", seen with one KV head).
  const kvDims = (length: string) => ['R', kvHeads, length, headDim];
  const row = ['R', 1];
  return body.graph(
    'decode_step',
    [
      valueInfo(iteration, DataType.INT64, []),
      valueInfo(condIn, DataType.BOOL, []),
      valueInfo(tokenIn, DataType.INT64, row),
      valueInfo(positionIn, DataType.INT64, row),
      valueInfo(seenIn, DataType.BOOL),
      ...recentIn.flat().map((name) => valueInfo(name, DataType.FLOAT, kvDims('T_recent_in'))),
    ],
    [
      valueInfo(body.op('Identity', [condIn]), DataType.BOOL, []),
      valueInfo(token, DataType.INT64, row),
      valueInfo(body.op('Add', [positionIn, g.int64([1])]), DataType.INT64, row),
      valueInfo(seen, DataType.BOOL),
      ...recentOut.flat().map((name) => valueInfo(name, DataType.FLOAT, kvDims('T_recent_out'))),
      valueInfo(body.op('Identity', [token]), DataType.INT64, row),
      valueInfo(body.op('Identity', [logprob]), DataType.FLOAT, row),
      valueInfo(body.op('Identity', [modelLogprob]), DataType.FLOAT, row),
      valueInfo(body.op('Identity', [top[0]]), DataType.FLOAT, ['R', 'K']),
      valueInfo(body.op('Identity', [top[1]]), DataType.INT64, ['R', 'K']),
    ],
  );
}

/** Runs the `Loop` after the first step and writes the graph outputs. */
function emitLoopAndOutputs(context: LoopContext, first: FirstStep, bodyGraph: OnnxGraph): void {
  const { g } = context;
  const layers = context.config.num_hidden_layers;
  const emptyRecent = (tensor: string) =>
    g.op('Slice', [tensor, g.int64([0]), g.int64([0]), g.int64([2])]);
  const steps = g.op('Gather', [g.op('Shape', [io.uniforms]), g.int64([1], [])], { axis: 0 });
  const loopOutputs = g.add(
    'Loop',
    [
      g.op('Sub', [steps, g.int64([1], [])]),
      '',
      first.token,
      first.position,
      first.seen,
      ...first.rowPast.flatMap(([key, value]) => [emptyRecent(key), emptyRecent(value)]),
    ],
    { body: { graph: bodyGraph } },
    3 + 2 * layers + 5,
  );
  const finalRecent = loopOutputs.slice(3, 3 + 2 * layers);
  const [scanTokens, scanLogprobs, scanModels, scanTopValues, scanTopIds] = loopOutputs.slice(
    3 + 2 * layers,
  ) as [string, string, string, string, string];
  // scan outputs are [N − 1, R, 1]: → [R, N − 1], after the first step's column
  const columns = (firstColumn: string, scanned: string, output: string) =>
    g.add(
      'Concat',
      [
        firstColumn,
        g.op('Transpose', [g.op('Squeeze', [scanned, g.int64([2])])], { perm: [1, 0] }),
      ],
      { axis: 1 },
      [output],
    );
  const out = LOOP_IO.outputs;
  columns(first.token, scanTokens, out.tokens);
  columns(first.logprob, scanLogprobs, out.logprobs);
  columns(first.modelLogprob, scanModels, out.modelLogprobs);
  emitTopLogprobColumns(g, first.top[0], scanTopValues, out.topValues);
  emitTopLogprobColumns(g, first.top[1], scanTopIds, out.topIds);
  first.rowPast.forEach(([key, value], layer) => {
    g.add('Concat', [key, finalRecent[2 * layer]!], { axis: 2 }, [LOOP_IO.present(layer, 'key')]);
    g.add('Concat', [value, finalRecent[2 * layer + 1]!], { axis: 2 }, [
      LOOP_IO.present(layer, 'value'),
    ]);
  });
}

/** The loop graph's inputs and outputs. */
function loopGraphIo(config: ModelConfig): { input: OnnxValueInfo[]; output: OnnxValueInfo[] } {
  const { num_key_value_heads: kvHeads, head_dim: headDim } = config;
  const scalar = (name: string, type: number) => valueInfo(name, type, []);
  const input = [
    valueInfo(io.inputIds, DataType.INT64, ['P', 'S']),
    valueInfo(io.attentionMask, DataType.INT64, ['P', 'T']),
    valueInfo(io.positionIds, DataType.INT64, ['P', 'S']),
    valueInfo(io.rows, DataType.INT64, ['R']),
    valueInfo(io.uniforms, DataType.FLOAT, ['R', 'N']),
    valueInfo(io.seen, DataType.BOOL, ['seen_rows', config.vocab_size]),
    scalar(io.temperature, DataType.FLOAT),
    scalar(io.greedy, DataType.BOOL),
    scalar(io.filter, DataType.BOOL),
    scalar(io.listSize, DataType.INT64),
    scalar(io.cheapSize, DataType.INT64),
    scalar(io.middleSize, DataType.INT64),
    scalar(io.topP, DataType.FLOAT),
    scalar(io.minP, DataType.FLOAT),
    scalar(io.useMinP, DataType.BOOL),
    scalar(io.penalty, DataType.FLOAT),
    scalar(io.usePenalty, DataType.BOOL),
    scalar(io.modelLogprobs, DataType.BOOL),
    scalar(io.topLogprobs, DataType.INT64),
  ];
  const out = LOOP_IO.outputs;
  const output = [
    valueInfo(out.tokens, DataType.INT64, ['R', 'N']),
    valueInfo(out.logprobs, DataType.FLOAT, ['R', 'N']),
    valueInfo(out.modelLogprobs, DataType.FLOAT, ['R', 'N']),
    valueInfo(out.topValues, DataType.FLOAT, ['R', 'N', 'K']),
    valueInfo(out.topIds, DataType.INT64, ['R', 'N', 'K']),
  ];
  for (let layer = 0; layer < config.num_hidden_layers; layer++) {
    for (const kind of ['key', 'value'] as const) {
      input.push(
        valueInfo(LOOP_IO.past(layer, kind), DataType.FLOAT, ['P', kvHeads, 'Tp', headDim]),
      );
      output.push(
        valueInfo(LOOP_IO.present(layer, kind), DataType.FLOAT, ['R', kvHeads, 'Tn', headDim]),
      );
    }
  }
  return { input, output };
}

/**
 * Builds the decoding graph of a checkpoint for `LoopDecoder`: one `session.run` feeds `input_ids`
 * `[P, S]` (the prompts, left-padded, or the last sampled token of each row) after the KV cache
 * `past_key_values.{i}.key|value` `[P, kv_heads, T, head_dim]` (`attention_mask` `[P, T + S]`,
 * `position_ids` `[P, S]`), picks output rows `rows` `[R]` (a prompt's row copied to each of its
 * samples), then samples `N` tokens per row in-graph — the first from the last position's logits,
 * the others inside an ONNX `Loop` that feeds each sampled token back — with one uniform per token
 * from `uniforms` `[R, N]`. Outputs `tokens` `[R, N]` int64, `logprobs` and `model_logprobs`
 * `[R, N]` float32, and `present.{i}.key|value` `[R, kv_heads, T + S + N − 1, head_dim]` (every
 * token fed so far; the last sampled token is fed by the next call).
 *
 * The model is `@rlvr/model`'s Llama layers ({@link createLlamaLayers}, the ones `exportOnnx` is
 * built from) with the `'gemm'` projection layout: `Gemm` with `transB` on the checkpoint's
 * `[out, in]` weights (no transposes on export); the 1/√head_dim score scale is Gemm's
 * `alpha`/`beta` on `q_proj`. Inside the loop the cache of the call's inputs stays fixed (read
 * from the outer scope, never copied) and only the tokens of this call are carried and
 * concatenated (attention over both blocks under one softmax), so a step costs no copy of the
 * whole cache.
 * @internal
 */
export function buildLoopGraph(
  checkpoint: Checkpoint,
  functionName = 'buildLoopGraph',
): Uint8Array {
  return encodeLoopGraph(checkpoint, functionName, false).bytes;
}

/** A weight fed to the loop graph as an input: its checkpoint name and shape. @internal */
export type WeightInput = { name: string; dims: number[] };

/**
 * The graph of {@link buildLoopGraph} with every checkpoint tensor as a graph input (named as in
 * the checkpoint) instead of an initializer: the encoded model holds no weights (it is small and
 * fast to build, with no 2 GiB limit) and a weight update is a copy into the arrays fed to
 * `session.run`, not a new session. Returns the bytes and the weight inputs in graph order.
 * @internal
 */
export function buildLoopGraphWithWeightInputs(
  checkpoint: Checkpoint,
  functionName = 'buildLoopGraph',
): { bytes: Uint8Array; weights: WeightInput[] } {
  return encodeLoopGraph(checkpoint, functionName, true);
}

/** A builder that turns checkpoint weights into graph inputs (other floats stay initializers). */
class WeightInputBuilder extends GraphBuilder {
  readonly weightInputs: WeightInput[] = [];
  private readonly names: Set<string>;

  constructor(names: Set<string>) {
    super();
    this.names = names;
  }

  override weight(name: string, dims: number[], data: Float32Array): string {
    if (!this.names.has(name)) return super.weight(name, dims, data);
    this.weightInputs.push({ name, dims: [...dims] });
    return name;
  }
}

function encodeLoopGraph(
  checkpoint: Checkpoint,
  functionName: string,
  weightInputs: boolean,
): { bytes: Uint8Array; weights: WeightInput[] } {
  const valid = validateCheckpoint(checkpoint, { functionName });
  const { config } = valid;
  const g = weightInputs
    ? new WeightInputBuilder(new Set(valid.tensors.map((tensor) => tensor.name)))
    : new GraphBuilder();
  const headDim = config.head_dim;
  const context: LoopContext = {
    g,
    llama: createLlamaLayers(g, valid, { projection: 'gemm' }),
    config,
    mergedShape: g.int64([-1, config.num_attention_heads * headDim]),
    headsShapes: (b, batchBySeq) => {
      const shapes = new Map<number, string>();
      return (count) => {
        let shape = shapes.get(count);
        if (!shape) {
          shape = b.op('Concat', [batchBySeq, g.int64([count, headDim])], { axis: 0 });
          shapes.set(count, shape);
        }
        return shape;
      };
    },
    uniformAt: (b, step) => b.op('Gather', [io.uniforms, step], { axis: 1 }),
  };
  const first = emitFirstStep(context);
  emitLoopAndOutputs(context, first, emitLoopBody(context, first));
  const weights = g instanceof WeightInputBuilder ? g.weightInputs : [];
  const graphIo = loopGraphIo(config);
  graphIo.input.push(...weights.map(({ name, dims }) => valueInfo(name, DataType.FLOAT, dims)));
  const bytes = g.encode(
    {
      irVersion: IR_VERSION,
      opset: LOOP_OPSET,
      producerName: '@rlvr/rollout',
      graph: { name: `${config.model_type}_sampling_loop`, ...graphIo },
    },
    functionName,
  );
  return { bytes, weights };
}
