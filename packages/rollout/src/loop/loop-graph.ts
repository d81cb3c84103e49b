import type { NamedTensor } from '@rlvr/core';
import { type Checkpoint, llamaBiases, validateCheckpoint } from '@rlvr/model';
import { DataType, GraphBuilder, onnx, valueInfo } from './graph-builder.js';

/** ONNX opset of the loop graph (plain ai.onnx ops only). @internal */
export const LOOP_OPSET = 17;
const IR_VERSION = 8;
/** Additive attention bias at padded key positions (−1e9, not −∞: no NaN rows). */
const MASK_VALUE = -1e9;

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

type Sampling = {
  invTemperature: string;
  greedy: string;
  filter: string;
  listSize: string;
  cheapSize: string;
  middleSize: string;
  topP: string;
  minP: string;
  useMinP: string;
  penalty: string;
  usePenalty: string;
  modelLogprobs: string;
};

/** An `If` node whose branches both output `[R,1]`-sized values of the given types. */
function emitIf(
  g: GraphBuilder,
  condition: string,
  name: string,
  types: number[],
  thenBody: (b: GraphBuilder) => string[],
  elseBody: (b: GraphBuilder) => string[],
): string[] {
  const branch = (suffix: string, body: (b: GraphBuilder) => string[]) => {
    const b = g.child();
    // a branch output must be produced inside the branch: wrap outer values in Identity
    const outputs = body(b).map((value) => b.op('Identity', [value]));
    return {
      graph: b.graph(
        `${name}_${suffix}`,
        [],
        outputs.map((value, index) => valueInfo(value, types[index]!)),
      ),
    };
  };
  return g.add(
    'If',
    [condition],
    { then_branch: branch('then', thenBody), else_branch: branch('else', elseBody) },
    types.length,
  );
}

/**
 * Emits in-graph sampling for one step: repetition penalty → temperature → top-k → exact top-p
 * (the nucleus of a `TopK` sort of `list_size` tokens, ties to the lower id; only the best
 * `cheap_size` or `middle_size` are sorted when they already hold the nucleus of every row) →
 * min-p, then one draw by inverse CDF over ascending token ids with `uniform` `[R,1]` — the rules of
 * `DistributionBuilder`, in float32. Each combination of options is its own `If` branch, so that
 * only small `[R,1]` values cross branch boundaries (no copies of `[R, vocab]` tensors).
 * Returns `[token [R,1] int64, logprob [R,1], modelLogprob [R,1], seen']`.
 */
function emitSample(
  g: GraphBuilder,
  logits: string,
  uniform: string,
  seen: string,
  s: Sampling,
  vocab: number,
): [string, string, string, string] {
  const axis1 = g.int64([1]);
  const { FLOAT, INT64, BOOL } = DataType;

  /** Sampling from `processed` logits with or without the top-k/top-p/min-p filter. */
  const draw = (b: GraphBuilder, processed: string, filter: boolean, minP: boolean): string[] => {
    const z = b.op('Mul', [processed, s.invTemperature]);
    const max = b.op('ReduceMax', [z], { axes: [1], keepdims: 1 });
    const shifted = b.op('Sub', [z, max]);
    const weights = b.op('Exp', [shifted]);
    let kept = weights;
    if (filter) {
      const total = b.op('ReduceSum', [weights, axis1], { keepdims: 1 });
      const isVocab = b.op('Equal', [s.listSize, g.int64([vocab], [])]);
      const sortList = (c: GraphBuilder, size: string) => {
        const k = c.op('Reshape', [size, axis1]);
        const [values, indices] = c.add('TopK', [z, k], { axis: 1, largest: 1, sorted: 1 }, 2) as [
          string,
          string,
        ];
        const sortedWeights = c.op('Exp', [c.op('Sub', [values, max])]);
        const cumulative = c.op('CumSum', [sortedWeights, g.int64([1], [])]);
        const before = c.op('CumSum', [sortedWeights, g.int64([1], [])], { exclusive: 1 });
        const last = c.op('Gather', [cumulative, c.op('Sub', [k, axis1])], { axis: 1 });
        const target = c.op('Mul', [c.op('Where', [isVocab, total, last]), s.topP]);
        return { values, indices, before, last, target };
      };
      // the last kept entry (value, id): the nucleus is every entry whose preceding mass < target
      const boundary = (c: GraphBuilder, list: ReturnType<typeof sortList>): string[] => {
        const count = c.op(
          'ReduceSum',
          [c.op('Cast', [c.op('Less', [list.before, list.target])], { to: INT64 }), axis1],
          { keepdims: 1 },
        );
        const one = g.int64([1], [1, 1]);
        const lastKept = c.op('Sub', [c.op('Max', [count, one]), one]);
        return [
          c.op('GatherElements', [list.values, lastKept], { axis: 1 }),
          c.op('GatherElements', [list.indices, lastKept], { axis: 1 }),
        ];
      };
      // Sort the best `cheap_size`, then `middle_size`, and the whole list only when some row's
      // nucleus is longer (a full sort of a 32k vocabulary costs ~300 ms for 64 rows).
      const sizes = [s.cheapSize, s.middleSize, s.listSize];
      const tier = (c: GraphBuilder, index: number): string[] => {
        const list = sortList(c, sizes[index]!);
        if (index === sizes.length - 1) return boundary(c, list);
        const everyRow = c.op(
          'ReduceMin',
          [c.op('Cast', [c.op('GreaterOrEqual', [list.last, list.target])], { to: FLOAT })],
          { keepdims: 0 },
        );
        const covers = c.op('Or', [
          c.op('Equal', [s.listSize, sizes[index]!]),
          c.op('And', [isVocab, c.op('Cast', [everyRow], { to: BOOL })]),
        ]);
        return emitIf(
          c,
          covers,
          `sorted_${index}`,
          [FLOAT, INT64],
          (d) => boundary(d, list),
          (d) => tier(d, index + 1),
        );
      };
      const [value, id] = tier(b, 0) as [string, string];
      // kept: z > v, or z == v and id <= id(v) (ties go to the lower id, as in the sort)
      const keptMask = b.op('Or', [
        b.op('Greater', [z, value]),
        b.op('And', [b.op('Equal', [z, value]), b.op('LessOrEqual', [g.int64(range(vocab)), id])]),
      ]);
      kept = b.op('Where', [keptMask, weights, g.float([0])]);
    }
    if (minP) {
      // min-p: weights are relative to the top token (weight 1)
      kept = b.op('Where', [b.op('Less', [weights, s.minP]), g.float([0]), kept]);
    }
    // inverse CDF over ascending ids: the first token whose cumulative weight exceeds u · mass,
    // found block by block (one pass over the vocabulary instead of a sequential CumSum)
    const block = Math.min(256, vocab);
    const blocks = Math.ceil(vocab / block);
    const padded =
      blocks * block === vocab
        ? kept
        : b.op('Pad', [kept, g.int64([0, 0, 0, blocks * block - vocab])]);
    const grid = b.op('Reshape', [padded, g.int64([0, blocks, block])]);
    const blockMass = b.op('ReduceSum', [grid, g.int64([2])], { keepdims: 0 }); // [R, blocks]
    const blockEnd = b.op('CumSum', [blockMass, g.int64([1], [])]);
    const mass = b.op('Gather', [blockEnd, g.int64([blocks - 1])], { axis: 1 }); // [R,1]
    const target = b.op('Mul', [uniform, mass]);
    const firstWhere = (c: string) =>
      b.op('ArgMax', [b.op('Cast', [c], { to: FLOAT })], { axis: 1, keepdims: 1 });
    const chosenBlock = firstWhere(
      b.op('Or', [b.op('Greater', [blockEnd, target]), b.op('GreaterOrEqual', [blockEnd, mass])]),
    );
    const blockStart = b.op(
      'GatherElements',
      [b.op('CumSum', [blockMass, g.int64([1], [])], { exclusive: 1 }), chosenBlock],
      { axis: 1 },
    );
    const inner = b.op('Reshape', [
      b.op(
        'GatherElements',
        [
          grid,
          b.op('Expand', [b.op('Unsqueeze', [chosenBlock, g.int64([2])]), g.int64([1, 1, block])]),
        ],
        { axis: 1 },
      ),
      g.int64([0, block]),
    ]);
    const innerEnd = b.op('Add', [b.op('CumSum', [inner, g.int64([1], [])]), blockStart]);
    const innerLast = b.op('Gather', [innerEnd, g.int64([block - 1])], { axis: 1 });
    const offset = firstWhere(
      b.op('Or', [
        b.op('Greater', [innerEnd, target]),
        b.op('GreaterOrEqual', [innerEnd, innerLast]),
      ]),
    );
    const token = b.op('Add', [b.op('Mul', [chosenBlock, g.int64([block], [])]), offset]);
    const logprob = b.op('Sub', [
      b.op('GatherElements', [shifted, token], { axis: 1 }),
      b.op('Log', [mass]),
    ]);
    return [token, logprob];
  };

  const withMinP = (b: GraphBuilder, processed: string, filter: boolean): string[] =>
    emitIf(
      b,
      s.useMinP,
      'min_p',
      [INT64, FLOAT],
      (c) => draw(c, processed, filter, true),
      (c) => draw(c, processed, filter, false),
    );

  /** greedy → argmax (lowest id on ties), logprob 0; else a draw, filtered or not. */
  const pick = (b: GraphBuilder, processed: string): string[] =>
    emitIf(
      b,
      s.greedy,
      'greedy',
      [INT64, FLOAT],
      (c) => {
        const token = c.op('ArgMax', [processed], { axis: 1, keepdims: 1 });
        return [token, c.op('Mul', [c.op('Cast', [token], { to: FLOAT }), g.float([0])])];
      },
      (c) =>
        emitIf(
          c,
          s.filter,
          'filter',
          [INT64, FLOAT],
          (d) => withMinP(d, processed, true),
          (d) => withMinP(d, processed, false),
        ),
    );

  const [token, logprob, nextSeen] = emitIf(
    g,
    s.usePenalty,
    'penalty',
    [INT64, FLOAT, BOOL],
    (b) => {
      // repetition penalty (CTRL) over the seen tokens
      const scaled = b.op('Where', [
        b.op('Less', [logits, g.float([0])]),
        b.op('Mul', [logits, s.penalty]),
        b.op('Div', [logits, s.penalty]),
      ]);
      const [picked, pickedLogprob] = pick(b, b.op('Where', [seen, scaled, logits])) as [
        string,
        string,
      ];
      const marked = b.op(
        'ScatterElements',
        [seen, picked, b.op('Expand', [g.bool([true], [1, 1]), b.op('Shape', [picked])])],
        { axis: 1 },
      );
      return [picked, pickedLogprob, marked];
    },
    (b) => [...pick(b, logits), seen],
  ) as [string, string, string];

  // model logprob: log softmax of the raw logits at temperature 1
  const [modelLogprob] = emitIf(
    g,
    s.modelLogprobs,
    'model_logprob',
    [FLOAT],
    (b) => {
      const rawMax = b.op('ReduceMax', [logits], { axes: [1], keepdims: 1 });
      const rawShifted = b.op('Sub', [logits, rawMax]);
      const logSum = b.op('Log', [
        b.op('ReduceSum', [b.op('Exp', [rawShifted]), axis1], { keepdims: 1 }),
      ]);
      return [b.op('Sub', [b.op('GatherElements', [rawShifted, token], { axis: 1 }), logSum])];
    },
    () => [logprob],
  ) as [string];
  return [token, logprob, modelLogprob, nextSeen];
}

function range(count: number): number[] {
  return Array.from({ length: count }, (_, index) => index);
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
 * Inside the loop the cache of the call's inputs stays fixed (read from the outer scope, never
 * copied) and only the tokens of this call are carried and concatenated, so a step costs no
 * copy of the whole cache. Projections are `Gemm` with `transB` on the checkpoint's `[out, in]`
 * weights (no transposes on export); the 1/√head_dim score scale is Gemm's `alpha`/`beta` on
 * `q_proj`.
 * @internal
 */
export function buildLoopGraph(checkpoint: Checkpoint): Uint8Array {
  const { config, tensors } = validateCheckpoint(checkpoint, { functionName: 'buildLoopGraph' });
  const weights = new Map<string, NamedTensor>(tensors.map((tensor) => [tensor.name, tensor]));
  const {
    hidden_size: hidden,
    num_attention_heads: heads,
    num_key_value_heads: kvHeads,
    head_dim: headDim,
    vocab_size: vocab,
    num_hidden_layers: layers,
  } = config;
  const group = heads / kvHeads;
  const half = headDim / 2;
  const biases = llamaBiases(config);
  const g = new GraphBuilder();
  const io = LOOP_IO.inputs;
  const w = (name: string): string => {
    const tensor = weights.get(name)!;
    return g.weight(name, [...tensor.shape], tensor.data as Float32Array);
  };
  const weightNames = new Map<string, string>();
  const weight = (name: string): string => {
    let value = weightNames.get(name);
    if (!value) {
      value = w(name);
      weightNames.set(name, value);
    }
    return value;
  };
  const axisLast = g.int64([-1]);
  const queryScale = 1 / Math.sqrt(headDim);
  const inverseFrequency = new Float32Array(half);
  for (let i = 0; i < half; i++) inverseFrequency[i] = 1 / config.rope_theta ** ((2 * i) / headDim);
  const invFreq = g.weight('rope.inv_freq', [half], inverseFrequency);

  const rmsNorm = (b: GraphBuilder, x: string, name: string): string => {
    const meanSquare = b.op('ReduceMean', [b.op('Mul', [x, x])], { axes: [-1], keepdims: 1 });
    const root = b.op('Sqrt', [b.op('Add', [meanSquare, g.float([config.rms_norm_eps])])]);
    return b.op('Mul', [b.op('Div', [x, root]), weight(name)]);
  };
  const linear = (b: GraphBuilder, x: string, name: string, bias: boolean, scale = 1): string =>
    b.op(
      'Gemm',
      bias ? [x, weight(`${name}.weight`), weight(`${name}.bias`)] : [x, weight(`${name}.weight`)],
      {
        transB: 1,
        alpha: { float: scale },
        beta: { float: scale },
      },
    );
  /** cos, sin `[B, 1, S, D]` from positions `[B, S]` int64. */
  const ropeTables = (b: GraphBuilder, positions: string): [string, string] => {
    const frequencies = b.op('Mul', [
      b.op('Unsqueeze', [b.op('Cast', [positions], { to: DataType.FLOAT }), g.int64([2])]),
      invFreq,
    ]);
    const angles = b.op('Unsqueeze', [
      b.op('Concat', [frequencies, frequencies], { axis: -1 }),
      g.int64([1]),
    ]);
    return [b.op('Cos', [angles]), b.op('Sin', [angles])];
  };
  const rope = (b: GraphBuilder, x: string, cos: string, sin: string): string => {
    const first = b.op('Slice', [x, g.int64([0]), g.int64([half]), axisLast]);
    const second = b.op('Slice', [x, g.int64([half]), g.int64([headDim]), axisLast]);
    const rotated = b.op('Concat', [b.op('Neg', [second]), first], { axis: -1 });
    return b.op('Add', [b.op('Mul', [x, cos]), b.op('Mul', [rotated, sin])]);
  };

  /**
   * One decoder layer stack over `x` `[B·S, hidden]`; `attend(layer, q, k, v)` gets
   * `q` `[B, heads, S, D]`, `k`, `v` `[B, kv_heads, S, D]` (RoPE applied) and returns the
   * attention context `[B·S, heads·D]`.
   */
  const layersOf = (
    b: GraphBuilder,
    input: string,
    batchBySeq: string, // int64 [2]: [B, S]
    cos: string,
    sin: string,
    attend: (layer: number, q: string, k: string, v: string) => string,
  ): string => {
    let x = input;
    const toHeads = (value: string, count: number): string =>
      b.op(
        'Transpose',
        [
          b.op('Reshape', [
            value,
            b.op('Concat', [batchBySeq, g.int64([count, headDim])], { axis: 0 }),
          ]),
        ],
        { perm: [0, 2, 1, 3] },
      );
    for (let layer = 0; layer < layers; layer++) {
      const prefix = `model.layers.${layer}`;
      const normed = rmsNorm(b, x, `${prefix}.input_layernorm.weight`);
      const q = linear(b, normed, `${prefix}.self_attn.q_proj`, biases.qkv, queryScale);
      const k = linear(b, normed, `${prefix}.self_attn.k_proj`, biases.qkv);
      const v = linear(b, normed, `${prefix}.self_attn.v_proj`, biases.qkv);
      const context = attend(
        layer,
        rope(b, toHeads(q, heads), cos, sin),
        rope(b, toHeads(k, kvHeads), cos, sin),
        toHeads(v, kvHeads),
      );
      x = b.op('Add', [x, linear(b, context, `${prefix}.self_attn.o_proj`, biases.o)]);
      const postNormed = rmsNorm(b, x, `${prefix}.post_attention_layernorm.weight`);
      const gate = linear(b, postNormed, `${prefix}.mlp.gate_proj`, false);
      const up = linear(b, postNormed, `${prefix}.mlp.up_proj`, false);
      const activated = b.op('Mul', [b.op('Mul', [gate, b.op('Sigmoid', [gate])]), up]);
      x = b.op('Add', [x, linear(b, activated, `${prefix}.mlp.down_proj`, false)]);
    }
    return x;
  };
  const lmHead = config.tie_word_embeddings
    ? weight('model.embed_tokens.weight')
    : weight('lm_head.weight');
  const logitsOf = (b: GraphBuilder, x: string): string =>
    b.op('Gemm', [rmsNorm(b, x, 'model.norm.weight'), lmHead], { transB: 1 });
  /** [B, kvH, g, S, D] context → [B·S, heads·D]. */
  const mergeHeads = (b: GraphBuilder, context: string): string =>
    b.op('Reshape', [
      b.op('Transpose', [b.op('Reshape', [context, g.int64([0, heads, -1, headDim])])], {
        perm: [0, 2, 1, 3],
      }),
      g.int64([-1, heads * headDim]),
    ]);
  const grouped = (b: GraphBuilder, q: string): string =>
    b.op('Reshape', [q, g.int64([0, kvHeads, group, -1, headDim])]);
  const groupAxis = g.int64([2]);

  // ---- the first step: S tokens per input row after the past cache ----
  const idsShape = g.op('Shape', [io.inputIds]);
  const embedded = g.op('Reshape', [
    g.op('Gather', [weight('model.embed_tokens.weight'), io.inputIds], { axis: 0 }),
    g.int64([-1, hidden]),
  ]);
  const [cos0, sin0] = ropeTables(g, io.positionIds);
  const totalLength = g.op('Gather', [g.op('Shape', [io.attentionMask]), g.int64([1])], {
    axis: 0,
  });
  const seqLength = g.op('Gather', [idsShape, g.int64([1])], { axis: 0 });
  const pastLength = g.op('Sub', [totalLength, seqLength]);
  const keyIndex = g.op('Range', [
    g.int64([0], []),
    g.op('Squeeze', [totalLength]),
    g.int64([1], []),
  ]);
  const queryIndex = g.op('Unsqueeze', [
    g.op('Range', [
      g.op('Squeeze', [pastLength]),
      g.op('Squeeze', [totalLength]),
      g.int64([1], []),
    ]),
    g.int64([1]),
  ]);
  const maskBool = g.op('Cast', [io.attentionMask], { to: DataType.BOOL });
  const visible = g.op('And', [
    g.op('LessOrEqual', [keyIndex, queryIndex]),
    g.op('Unsqueeze', [maskBool, g.int64([1, 2, 3])]),
  ]);
  const bias0 = g.op('Where', [visible, g.float([0]), g.float([MASK_VALUE])]); // [P,1,1,S,T]
  const presents: [string, string][] = [];
  const state0 = layersOf(g, embedded, idsShape, cos0, sin0, (layer, q, k, v) => {
    const presentK = g.op('Concat', [LOOP_IO.past(layer, 'key'), k], { axis: 2 });
    const presentV = g.op('Concat', [LOOP_IO.past(layer, 'value'), v], { axis: 2 });
    presents.push([presentK, presentV]);
    const keyT = g.op('Unsqueeze', [
      g.op('Transpose', [presentK], { perm: [0, 1, 3, 2] }),
      groupAxis,
    ]);
    const scores = g.op('Add', [g.op('MatMul', [grouped(g, q), keyT]), bias0]);
    const probabilities = g.op('Softmax', [scores], { axis: -1 });
    const context = g.op('MatMul', [probabilities, g.op('Unsqueeze', [presentV, groupAxis])]);
    return mergeHeads(g, context);
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
  const logits0 = logitsOf(g, rowState);
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
  const pastKeysT = rowPast.map(([key]) =>
    g.op('Unsqueeze', [g.op('Transpose', [key!], { perm: [0, 1, 3, 2] }), groupAxis]),
  );
  const pastValues = rowPast.map(([, value]) => g.op('Unsqueeze', [value!, groupAxis]));
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
  const bodyEmbedded = body.op('Reshape', [
    body.op('Gather', [weight('model.embed_tokens.weight'), tokenIn], { axis: 0 }),
    g.int64([-1, hidden]),
  ]);
  const [cos, sin] = ropeTables(body, positionIn);
  const pastLengthRow = body.op('Gather', [body.op('Shape', [rowMask]), g.int64([1])], { axis: 0 });
  const recentOut: string[][] = [];
  const bodyState = layersOf(body, bodyEmbedded, rowBySeq, cos, sin, (layer, q, k, v) => {
    const recentK = body.op('Concat', [recentIn[layer]![0]!, k], { axis: 2 });
    const recentV = body.op('Concat', [recentIn[layer]![1]!, v], { axis: 2 });
    recentOut.push([recentK, recentV]);
    const query = grouped(body, q);
    const pastScores = body.op('Add', [body.op('MatMul', [query, pastKeysT[layer]!]), pastBias]);
    const recentScores = body.op('MatMul', [
      query,
      body.op('Unsqueeze', [body.op('Transpose', [recentK], { perm: [0, 1, 3, 2] }), groupAxis]),
    ]);
    const probabilities = body.op(
      'Softmax',
      [body.op('Concat', [pastScores, recentScores], { axis: -1 })],
      { axis: -1 },
    );
    const pastProbabilities = body.op('Slice', [
      probabilities,
      g.int64([0]),
      pastLengthRow,
      axisLast,
    ]);
    const recentProbabilities = body.op('Slice', [
      probabilities,
      pastLengthRow,
      g.int64([2 ** 62]),
      axisLast,
    ]);
    const context = body.op('Add', [
      body.op('MatMul', [pastProbabilities, pastValues[layer]!]),
      body.op('MatMul', [recentProbabilities, body.op('Unsqueeze', [recentV, groupAxis])]),
    ]);
    return mergeHeads(body, context);
  });
  const bodyLogits = logitsOf(body, bodyState);
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
  const model: import('onnx-proto').onnx.IModelProto = {
    irVersion: IR_VERSION,
    opsetImport: [{ domain: '', version: LOOP_OPSET }],
    producerName: '@rlvr/rollout',
    graph: {
      name: `${config.model_type}_sampling_loop`,
      node: g.nodes,
      initializer: g.initializers,
      input: inputs,
      output: outputs,
    },
  };
  return onnx.ModelProto.encode(model).finish();
}
