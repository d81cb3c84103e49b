import { OnnxDataType as DataType, type GraphBuilder } from '@rlvr/model';

/** Buckets of the value histogram that finds the top-p boundary without sorting. @internal */
export const NUCLEUS_BUCKETS = 1024;

/** Below `max − 128` a weight `exp(z − max)` is 0 in float32: such tokens never bound a nucleus. */
const WEIGHTLESS = 128;

/** ONNX `TensorProto.INT32` (not in @rlvr/model's OnnxDataType): bucket ids take half the bytes. */
const INT32 = 6;

/** The most negative float32, for entries left out of the candidate sort. */
const LOWEST_FLOAT = -3.4028234663852886e38;

/**
 * Emits the last kept entry `[value [R,1], id [R,1]]` of the exact top-p nucleus of each row
 * without sorting the vocabulary: the nucleus is the sorted prefix (descending `z`, ties to the
 * lower id) of every entry whose preceding mass is below `target`.
 *
 * 1. A histogram of the weights over `NUCLEUS_BUCKETS` equal value intervals between the row's
 *    lowest weighted value and its max (one `ScatterElements` with `add`): bucket index is
 *    monotone in `z`, so the buckets above the boundary bucket hold entries that precede it.
 * 2. The boundary bucket is the lowest one whose mass above (reverse cumulative sum) stays below
 *    `target`; every entry above it is kept.
 * 3. Only the entries of that bucket are sorted (`TopK` with k = the largest bucket over the
 *    rows) and walked with the mass above as the starting cumulative mass, as the full sort does.
 *
 * The kept set is the one of a full sort; the cumulative masses are summed in another order, so a
 * boundary decided by float32 rounding (target within ~1e-7 relative of a prefix mass) may differ.
 * @internal
 */
export function emitHistogramNucleus(
  c: GraphBuilder,
  g: GraphBuilder,
  z: string,
  max: string,
  weights: string,
  target: string,
  vocab: number,
): [string, string] {
  const { INT64 } = DataType;
  const axis1 = g.int64([1]);
  const one = g.int64([1], [1, 1]);
  const buckets = Math.min(NUCLEUS_BUCKETS, vocab);
  const lowest = c.op('Max', [
    c.op('ReduceMin', [z], { axes: [1], keepdims: 1 }),
    c.op('Sub', [max, g.float([WEIGHTLESS])]),
  ]);
  const span = c.op('Max', [c.op('Sub', [max, lowest]), g.float([1e-30])]);
  const position = c.op('Mul', [c.op('Sub', [z, lowest]), c.op('Div', [g.float([buckets]), span])]);
  const clamped = c.op('Clip', [position, g.float([0]), g.float([buckets - 1])]);
  const bucket = c.op('Cast', [clamped], { to: INT32 }); // [R, V], truncation = floor here
  const rowsByBuckets = c.op(
    'Concat',
    [c.op('Slice', [c.op('Shape', [z]), g.int64([0]), g.int64([1])]), g.int64([buckets])],
    { axis: 0 },
  );
  const histogram = c.op(
    'ScatterElements',
    [c.op('ConstantOfShape', [rowsByBuckets]), bucket, weights],
    { axis: 1, reduction: 'add' },
  );
  // mass of the buckets above each bucket; the boundary bucket is the lowest with mass above < target
  const above = c.op('CumSum', [histogram, g.int64([1], [])], { exclusive: 1, reverse: 1 });
  const reaching = c.op(
    'ReduceSum',
    [c.op('Cast', [c.op('GreaterOrEqual', [above, target])], { to: INT64 }), axis1],
    { keepdims: 1 },
  );
  const chosen = c.op('Min', [reaching, g.int64([buckets - 1], [1, 1])]); // [R, 1]
  const massAbove = c.op('GatherElements', [above, chosen], { axis: 1 });
  const inBucket = c.op('Equal', [bucket, c.op('Cast', [chosen], { to: INT32 })]);
  const perRow = c.op('ReduceSum', [c.op('Cast', [inBucket], { to: INT64 }), axis1], {
    keepdims: 1,
  });
  const k = c.op('Max', [c.op('ReduceMax', [perRow], { keepdims: 0 }), g.int64([1], [])]);
  const [values, indices] = c.add(
    'TopK',
    [c.op('Where', [inBucket, z, g.float([LOWEST_FLOAT])]), c.op('Reshape', [k, axis1])],
    { axis: 1, largest: 1, sorted: 1 },
    2,
  ) as [string, string];
  const valid = c.op('Less', [c.op('Range', [g.int64([0], []), k, g.int64([1], [])]), perRow]);
  const sortedWeights = c.op('Where', [
    valid,
    c.op('Exp', [c.op('Sub', [values, max])]),
    g.float([0]),
  ]);
  const before = c.op('Add', [
    massAbove,
    c.op('CumSum', [sortedWeights, g.int64([1], [])], { exclusive: 1 }),
  ]);
  const count = c.op(
    'ReduceSum',
    [c.op('Cast', [c.op('And', [valid, c.op('Less', [before, target])])], { to: INT64 }), axis1],
    { keepdims: 1 },
  );
  const lastKept = c.op('Sub', [c.op('Max', [count, one]), one]);
  return [
    c.op('GatherElements', [values, lastKept], { axis: 1 }),
    c.op('GatherElements', [indices, lastKept], { axis: 1 }),
  ];
}
