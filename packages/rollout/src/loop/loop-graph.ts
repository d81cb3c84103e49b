import {
  type Checkpoint,
  createLlamaLayers,
  OnnxDataType as DataType,
  GraphBuilder,
  MASK_VALUE,
  validateCheckpoint,
  valueInfo,
} from '@rlvr/model';
import { emitSample, type Sampling } from './loop-sampling.js';

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
  },
  outputs: { tokens: 'tokens', logprobs: 'logprobs', modelLogprobs: 'model_logprobs' },
  past: (layer: number, kind: 'key' | 'value') => `past_key_values.${layer}.${kind}`,
  present: (layer: number, kind: 'key' | 'value') => `present.${layer}.${kind}`,
} as const;

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
  const valid = validateCheckpoint(checkpoint, { functionName });
  const { config } = valid;
  const {
    hidden_size: hidden,
    num_attention_heads: heads,
    num_key_value_heads: kvHeads,
    head_dim: headDim,
    vocab_size: vocab,
    num_hidden_layers: layers,
  } = config;
  const g = new GraphBuilder();
  const llama = createLlamaLayers(g, valid, { projection: 'gemm' });
  const io = LOOP_IO.inputs;
  const mergedShape = g.int64([-1, heads * headDim]);
  /** Reshape targets `[B, S, count, D]` for `[B·S, count·D]` rows, from `batchBySeq` `[B, S]`. */
  const headsShapes = (b: GraphBuilder, batchBySeq: string) => {
    const shapes = new Map<number, string>();
    return (count: number): string => {
      let shape = shapes.get(count);
      if (!shape) {
        shape = b.op('Concat', [batchBySeq, g.int64([count, headDim])], { axis: 0 });
        shapes.set(count, shape);
      }
      return shape;
    };
  };

  // ---- the first step: S tokens per input row after the past cache ----
  const idsShape = g.op('Shape', [io.inputIds]);
  const embedded = g.op('Reshape', [llama.embed(g, io.inputIds), g.int64([-1, hidden])]);
  const [cos0, sin0] = llama.ropeTables(g, io.positionIds);
  const seqLength = g.op('Gather', [idsShape, g.int64([1])], { axis: 0 });
  const bias0 = llama.attentionBias(g, io.inputIds, io.attentionMask); // [P,1,1,S,T]
  const maskBool = g.op('Cast', [io.attentionMask], { to: DataType.BOOL });
  const presents: [string, string][] = [];
  const state0 = llama.decoderLayers(g, embedded, {
    cos: cos0,
    sin: sin0,
    headsShape: headsShapes(g, idsShape),
    attend: (layer, q, k, v) => {
      const presentK = g.op('Concat', [LOOP_IO.past(layer, 'key'), k], { axis: 2 });
      const presentV = g.op('Concat', [LOOP_IO.past(layer, 'value'), v], { axis: 2 });
      presents.push([presentK, presentV]);
      const context = llama.attention(g, q, [
        {
          keys: llama.prepareKeys(g, presentK),
          values: llama.prepareValues(g, presentV),
          bias: bias0,
        },
      ]);
      return llama.mergeHeads(g, context, mergedShape);
    },
  });
  // last position of each input row, copied to the output rows
  const lastState = g.op(
    'Gather',
    [
      g.op('Reshape', [state0, g.op('Concat', [idsShape, g.int64([hidden])], { axis: 0 })]),
      g.op('Sub', [seqLength, g.int64([1])]),
    ],
    { axis: 1 },
  ); // [P, 1, hidden]
  const rowState = g.op('Reshape', [
    g.op('Gather', [lastState, io.rows], { axis: 0 }),
    g.int64([-1, hidden]),
  ]);
  const logits0 = llama.logits(g, rowState);
  const sampling: Sampling = {
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
  const uniformAt = (b: GraphBuilder, step: string): string =>
    b.op('Gather', [io.uniforms, step], { axis: 1 });
  const [token0, logprob0, modelLogprob0, seen0] = emitSample(
    g,
    logits0,
    uniformAt(g, g.int64([0])),
    io.seen,
    sampling,
    vocab,
  );
  // the cache of the output rows, fixed during the loop
  const rowPast = presents.map(([key, value]): [string, string] => [
    g.op('Gather', [key, io.rows], { axis: 0 }),
    g.op('Gather', [value, io.rows], { axis: 0 }),
  ]);
  const rowMask = g.op('Gather', [maskBool, io.rows], { axis: 0 });
  const pastBias = g.op('Unsqueeze', [
    g.op('Where', [rowMask, g.float([0]), g.float([MASK_VALUE])]),
    g.int64([1, 2, 3]),
  ]); // [R,1,1,1,T]
  const pastKeysT = rowPast.map(([key]) => llama.prepareKeys(g, key));
  const pastValues = rowPast.map(([, value]) => llama.prepareValues(g, value));
  const position0 = g.op('Add', [
    g.op(
      'Gather',
      [
        g.op('Gather', [io.positionIds, g.op('Sub', [seqLength, g.int64([1])])], { axis: 1 }),
        io.rows,
      ],
      { axis: 0 },
    ),
    g.int64([1]),
  ]); // [R, 1]
  const emptyRecent = (tensor: string) =>
    g.op('Slice', [tensor, g.int64([0]), g.int64([0]), g.int64([2])]);

  // ---- the loop: one token per row per iteration ----
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
  const rowCount = body.op('Gather', [body.op('Shape', [tokenIn]), g.int64([0])], { axis: 0 });
  const rowBySeq = body.op('Concat', [rowCount, g.int64([1])], { axis: 0 }); // [R, 1]
  const bodyEmbedded = body.op('Reshape', [llama.embed(body, tokenIn), g.int64([-1, hidden])]);
  const [cos, sin] = llama.ropeTables(body, positionIn);
  const pastLengthRow = body.op('Gather', [body.op('Shape', [rowMask]), g.int64([1])], { axis: 0 });
  const recentOut: string[][] = [];
  const bodyState = llama.decoderLayers(body, bodyEmbedded, {
    cos,
    sin,
    headsShape: headsShapes(body, rowBySeq),
    attend: (layer, q, k, v) => {
      const recentK = body.op('Concat', [recentIn[layer]![0]!, k], { axis: 2 });
      const recentV = body.op('Concat', [recentIn[layer]![1]!, v], { axis: 2 });
      recentOut.push([recentK, recentV]);
      const context = llama.attention(
        body,
        q,
        [
          { keys: pastKeysT[layer]!, values: pastValues[layer]!, bias: pastBias },
          { keys: llama.prepareKeys(body, recentK), values: llama.prepareValues(body, recentV) },
        ],
        pastLengthRow,
      );
      return llama.mergeHeads(body, context, mergedShape);
    },
  });
  const bodyLogits = llama.logits(body, bodyState);
  const [token, logprob, modelLogprob, seen] = emitSample(
    body,
    bodyLogits,
    uniformAt(body, body.op('Add', [iteration, g.int64([1])])),
    seenIn,
    sampling,
    vocab,
  );
  const condOut = body.op('Identity', [condIn]);
  const positionOut = body.op('Add', [positionIn, g.int64([1])]);
  const scanToken = body.op('Identity', [token]);
  const scanLogprob = body.op('Identity', [logprob]);
  const scanModel = body.op('Identity', [modelLogprob]);
  // The recent cache grows by one position per iteration: its input and output lengths must be
  // different symbolic dims, or ORT may plan to reuse the input buffer for the longer output
  // ("Shape mismatch attempting to re-use buffer", seen with one KV head).
  const kvDimsIn = ['R', kvHeads, 'T_recent_in', headDim];
  const kvDimsOut = ['R', kvHeads, 'T_recent_out', headDim];
  const bodyGraph = body.graph(
    'decode_step',
    [
      valueInfo(iteration, DataType.INT64, []),
      valueInfo(condIn, DataType.BOOL, []),
      valueInfo(tokenIn, DataType.INT64, ['R', 1]),
      valueInfo(positionIn, DataType.INT64, ['R', 1]),
      valueInfo(seenIn, DataType.BOOL),
      ...recentIn.flatMap(([key, value]) => [
        valueInfo(key!, DataType.FLOAT, kvDimsIn),
        valueInfo(value!, DataType.FLOAT, kvDimsIn),
      ]),
    ],
    [
      valueInfo(condOut, DataType.BOOL, []),
      valueInfo(token, DataType.INT64, ['R', 1]),
      valueInfo(positionOut, DataType.INT64, ['R', 1]),
      valueInfo(seen, DataType.BOOL),
      ...recentOut.flatMap(([key, value]) => [
        valueInfo(key!, DataType.FLOAT, kvDimsOut),
        valueInfo(value!, DataType.FLOAT, kvDimsOut),
      ]),
      valueInfo(scanToken, DataType.INT64, ['R', 1]),
      valueInfo(scanLogprob, DataType.FLOAT, ['R', 1]),
      valueInfo(scanModel, DataType.FLOAT, ['R', 1]),
    ],
  );
  const steps = g.op('Gather', [g.op('Shape', [io.uniforms]), g.int64([1], [])], { axis: 0 });
  const loopOutputs = g.add(
    'Loop',
    [
      g.op('Sub', [steps, g.int64([1], [])]),
      '',
      token0,
      position0,
      seen0,
      ...rowPast.flatMap(([key, value]) => [emptyRecent(key!), emptyRecent(value!)]),
    ],
    { body: { graph: bodyGraph } },
    3 + 2 * layers + 3,
  );
  const finalRecent = loopOutputs.slice(3, 3 + 2 * layers);
  const [scanTokens, scanLogprobs, scanModels] = loopOutputs.slice(3 + 2 * layers) as [
    string,
    string,
    string,
  ];
  // scan outputs are [N − 1, R, 1]: → [R, N − 1], after the first step's column
  const columns = (first: string, scanned: string, output: string) =>
    g.add(
      'Concat',
      [first, g.op('Transpose', [g.op('Squeeze', [scanned, g.int64([2])])], { perm: [1, 0] })],
      { axis: 1 },
      [output],
    );
  const out = LOOP_IO.outputs;
  columns(token0, scanTokens, out.tokens);
  columns(logprob0, scanLogprobs, out.logprobs);
  columns(modelLogprob0, scanModels, out.modelLogprobs);
  for (let layer = 0; layer < layers; layer++) {
    g.add('Concat', [rowPast[layer]![0]!, finalRecent[2 * layer]!], { axis: 2 }, [
      LOOP_IO.present(layer, 'key'),
    ]);
    g.add('Concat', [rowPast[layer]![1]!, finalRecent[2 * layer + 1]!], { axis: 2 }, [
      LOOP_IO.present(layer, 'value'),
    ]);
  }

  const scalar = (name: string, type: number) => valueInfo(name, type, []);
  const inputs = [
    valueInfo(io.inputIds, DataType.INT64, ['P', 'S']),
    valueInfo(io.attentionMask, DataType.INT64, ['P', 'T']),
    valueInfo(io.positionIds, DataType.INT64, ['P', 'S']),
    valueInfo(io.rows, DataType.INT64, ['R']),
    valueInfo(io.uniforms, DataType.FLOAT, ['R', 'N']),
    valueInfo(io.seen, DataType.BOOL, ['seen_rows', vocab]),
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
  ];
  const outputs = [
    valueInfo(out.tokens, DataType.INT64, ['R', 'N']),
    valueInfo(out.logprobs, DataType.FLOAT, ['R', 'N']),
    valueInfo(out.modelLogprobs, DataType.FLOAT, ['R', 'N']),
  ];
  for (let layer = 0; layer < layers; layer++) {
    for (const kind of ['key', 'value'] as const) {
      inputs.push(
        valueInfo(LOOP_IO.past(layer, kind), DataType.FLOAT, ['P', kvHeads, 'Tp', headDim]),
      );
      outputs.push(
        valueInfo(LOOP_IO.present(layer, kind), DataType.FLOAT, ['R', kvHeads, 'Tn', headDim]),
      );
    }
  }
  return g.encode(
    {
      irVersion: IR_VERSION,
      opset: LOOP_OPSET,
      producerName: '@rlvr/rollout',
      graph: { name: `${config.model_type}_sampling_loop`, input: inputs, output: outputs },
    },
    functionName,
  );
}
