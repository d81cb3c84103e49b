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
 * lower id) of every entry whose preceding mass is below `target`. `row` holds the processed
 * logits `z` `[R, V]`, their row max, `shifted = z − max` and `weights = exp(shifted)`.
 *
 * 1. A histogram of the weights over `NUCLEUS_BUCKETS` equal value intervals from the row's max
 *    down to its lowest weighted value (one `ScatterElements` with `add`; bucket 0 holds the
 *    max): the bucket index is monotone in `z`, so lower buckets hold entries that come first.
 * 2. The boundary bucket is the highest one whose mass before it (exclusive cumulative sum)
 *    stays below `target`; every entry of a lower bucket is kept.
 * 3. Only the entries of that bucket are sorted (`TopK` with k = the largest such bucket over the
 *    rows) and walked from the mass before the bucket, as the full sort walks them.
 *
 * The kept set is the one of a full sort; the cumulative masses are summed in another order, so a
 * boundary decided by float32 rounding (target within ~1e-7 relative of a prefix mass) may differ.
 * The third output is a scalar bool: whether some row has a *trailing tie* (an entry after the
 * last kept one with the same value, which the nucleus leaves out by id); without one, the kept
 * set of every row is simply `z ≥ value`.
 * @internal
 */
export function emitHistogramNucleus(
  c: GraphBuilder,
  g: GraphBuilder,
  row: { z: string; max: string; shifted: string; weights: string },
  target: string,
  vocab: number,
): [string, string, string] {
  const { FLOAT, INT64 } = DataType;
  const { z, max, shifted, weights } = row;
  const axis1 = g.int64([1]);
  const one = g.int64([1], [1, 1]);
  const buckets = Math.min(NUCLEUS_BUCKETS, vocab);
  // bucket = ⌊(max − z) · buckets / span⌋, capped; span = max − lowest weighted value
  const depth = c.op('Max', [
    c.op('ReduceMin', [shifted], { axes: [1], keepdims: 1 }),
    g.float([-WEIGHTLESS]),
  ]); // −span, in [−128, 0]
  const scale = c.op('Div', [g.float([buckets]), c.op('Min', [depth, g.float([-1e-30])])]);
  const position = c.op('Min', [c.op('Mul', [shifted, scale]), g.float([buckets - 1])]);
  const bucket = c.op('Cast', [position], { to: INT32 }); // [R, V], ≥ 0: truncation = floor
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
  // mass before each bucket; the boundary bucket is the last whose mass before stays < target
  const before = c.op('CumSum', [histogram, g.int64([1], [])], { exclusive: 1 });
  const below = c.op(
    'ReduceSum',
    [c.op('Cast', [c.op('Less', [before, target])], { to: INT64 }), axis1],
    { keepdims: 1 },
  );
  const chosen = c.op('Sub', [c.op('Max', [below, one]), one]); // [R, 1]
  const massBefore = c.op('GatherElements', [before, chosen], { axis: 1 });
  const inBucket = c.op('Cast', [c.op('Equal', [bucket, c.op('Cast', [chosen], { to: INT32 })])], {
    to: FLOAT,
  }); // 1 in the boundary bucket, else 0
  const perRow = c.op('Cast', [c.op('ReduceSum', [inBucket, axis1], { keepdims: 1 })], {
    to: INT64,
  });
  const k = c.op('Max', [c.op('ReduceMax', [perRow], { keepdims: 0 }), g.int64([1], [])]);
  // sort keys: z in the bucket (z + −0 = z), the lowest float elsewhere (LOWEST + z rounds to
  // LOWEST for any finite z): two cheap passes instead of a broadcasting Where
  const key = c.op('Add', [
    z,
    c.op('Mul', [c.op('Sub', [g.float([1]), inBucket]), g.float([LOWEST_FLOAT])]),
  ]);
  const [values, indices] = c.add(
    'TopK',
    [key, c.op('Reshape', [k, axis1])],
    { axis: 1, largest: 1, sorted: 1 },
    2,
  ) as [string, string];
  const valid = c.op('Less', [c.op('Range', [g.int64([0], []), k, g.int64([1], [])]), perRow]);
  const sortedWeights = c.op('Where', [
    valid,
    c.op('Exp', [c.op('Sub', [values, max])]),
    g.float([0]),
  ]);
  const preceding = c.op('Add', [
    massBefore,
    c.op('CumSum', [sortedWeights, g.int64([1], [])], { exclusive: 1 }),
  ]);
  const count = c.op(
    'ReduceSum',
    [c.op('Cast', [c.op('And', [valid, c.op('Less', [preceding, target])])], { to: INT64 }), axis1],
    { keepdims: 1 },
  );
  const lastKept = c.op('Sub', [c.op('Max', [count, one]), one]);
  const value = c.op('GatherElements', [values, lastKept], { axis: 1 });
  // entries with the boundary value share its bucket, so the sorted list holds all of them (ties
  // to the lower id first): a trailing tie is the next sorted entry of the bucket with that value
  const next = c.op('Add', [lastKept, one]);
  const nextValue = c.op(
    'GatherElements',
    [values, c.op('Min', [next, c.op('Sub', [c.op('Reshape', [k, g.int64([1, 1])]), one])])],
    { axis: 1 },
  );
  const tieRows = c.op('And', [c.op('Less', [next, perRow]), c.op('Equal', [nextValue, value])]);
  const trailingTie = c.op(
    'Cast',
    [c.op('ReduceMax', [c.op('Cast', [tieRows], { to: FLOAT })], { keepdims: 0 })],
    { to: DataType.BOOL },
  );
  return [value, c.op('GatherElements', [indices, lastKept], { axis: 1 }), trailingTie];
}
