import { OnnxDataType as DataType, type GraphBuilder, valueInfo } from '@rlvr/model';
import { emitHistogramNucleus } from './loop-nucleus.js';

/** Value names of the sampling inputs, as seen from the graph being built. @internal */
export type Sampling = {
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
 * How the top-p boundary over the whole vocabulary is found: `search` (default) sorts only the
 * tokens of one histogram bucket ({@link emitHistogramNucleus}); `sort` sorts the best
 * `cheap_size`, `middle_size`, then the whole vocabulary, as far as needed (the previous
 * implementation, kept for tests). @internal
 */
export type NucleusMethod = 'search' | 'sort';

/**
 * Emits in-graph sampling for one step: repetition penalty → temperature → top-k → exact top-p
 * (the nucleus of the sorted `list_size` tokens, ties to the lower id: over the whole vocabulary
 * a histogram search sorts only the tokens at the boundary — see {@link NucleusMethod}; a top-k
 * list sorts its best `cheap_size`, `middle_size`, then all, as far as every row's nucleus needs) →
 * min-p, then one draw by inverse CDF over ascending token ids with `uniform` `[R,1]` — the rules of
 * `DistributionBuilder`, in float32. Each combination of options is its own `If` branch, so that
 * only small `[R,1]` values cross branch boundaries (no copies of `[R, vocab]` tensors).
 * Returns `[token [R,1] int64, logprob [R,1], modelLogprob [R,1], seen']`.
 */
export function emitSample(
  g: GraphBuilder,
  logits: string,
  uniform: string,
  seen: string,
  s: Sampling,
  vocab: number,
  nucleus: NucleusMethod = 'search',
): [string, string, string, string] {
  const axis1 = g.int64([1]);
  const { FLOAT, INT64, BOOL } = DataType;

  /** Sampling from `processed` logits with or without the top-k/top-p/min-p filter. */
  const draw = (b: GraphBuilder, processed: string, filter: boolean, minP: boolean): string[] => {
    const z = b.op('Mul', [processed, s.invTemperature]);
    const max = b.op('ReduceMax', [z], { axes: [1], keepdims: 1 });
    const shifted = b.op('Sub', [z, max]);
    const weights = b.op('Exp', [shifted]);
    const finish = (c: GraphBuilder, kept: string) =>
      emitDraw(c, g, { kept, weights, shifted, uniform, minP: minP ? s.minP : undefined }, vocab);
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
      // nucleus is longer (a full sort of a 32k vocabulary costs ~300 ms for 64 rows): top-k
      // lists, and the whole vocabulary with the `sort` method.
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
      // kept: z > v, or z == v and id <= id(v) (ties go to the lower id, as in the sort)
      const exact = (c: GraphBuilder, value: string, id: string) => {
        const keptMask = c.op('Or', [
          c.op('Greater', [z, value]),
          c.op('And', [
            c.op('Equal', [z, value]),
            c.op('LessOrEqual', [g.int64(range(vocab)), id]),
          ]),
        ]);
        return finish(c, c.op('Where', [keptMask, weights, g.float([0])]));
      };
      if (nucleus === 'sort') {
        const [value, id] = tier(b, 0) as [string, string];
        return exact(b, value, id);
      }
      // over the whole vocabulary, the search costs the same for any nucleus size; it also says
      // whether a row has a trailing tie (a top-k list always takes the exact mask)
      const [value, id, trailingTie] = emitIf(
        b,
        isVocab,
        'nucleus_search',
        [FLOAT, INT64, BOOL],
        (c) =>
          emitHistogramNucleus(
            c,
            g,
            { z, max, shifted, weights },
            c.op('Mul', [total, s.topP]),
            vocab,
          ),
        (c) => [...tier(c, 0), g.bool([true], [])],
      ) as [string, string, string];
      // without a trailing tie in any row the kept set is z >= v (one comparison instead of five
      // passes); the rest of the draw is emitted in both branches so that only [R,1] values cross
      return emitIf(
        b,
        trailingTie,
        'nucleus_mask',
        [INT64, FLOAT],
        (c) => exact(c, value, id),
        (c) =>
          finish(
            c,
            c.op('Mul', [
              weights,
              c.op('Cast', [c.op('GreaterOrEqual', [z, value])], { to: FLOAT }),
            ]),
          ),
      );
    }
    return finish(b, weights);
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
 * min-p on the kept weights (`minP` given: weights below it are dropped; weights are relative to
 * the top token, weight 1), then one draw by inverse CDF over ascending ids with `uniform`.
 * Returns `[token [R,1] int64, logprob [R,1]]`.
 */
function emitDraw(
  b: GraphBuilder,
  g: GraphBuilder,
  row: { kept: string; weights: string; shifted: string; uniform: string; minP?: string },
  vocab: number,
): string[] {
  const { FLOAT } = DataType;
  const { weights, shifted, uniform } = row;
  let kept = row.kept;
  if (row.minP !== undefined) {
    kept = b.op('Where', [b.op('Less', [weights, row.minP]), g.float([0]), kept]);
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
}
