import { type GraphBuilder, MASK_VALUE } from '@rlvr/model';

/**
 * The biases of a sliding layer inside the loop body, per window `w`: at iteration `it` the query
 * is cache slot `T + it` (`T` = the call's fixed cache length), so a fixed-cache key `j` is visible
 * iff its mask is 1 and `T + it − j < w`, and the `it + 1` keys appended in this call (slots
 * `T … T + it`) iff `it − r < w`. Returns `[past block bias, recent block bias]` per window, built
 * once per body. `rowMask` is the bool mask `[R, T]` of the fixed cache.
 * @internal
 */
export function windowBiases(
  g: GraphBuilder,
  body: GraphBuilder,
  rowMask: string,
  pastBias: string,
  iteration: string,
): (window: number) => [string, string] {
  const cache = new Map<number, [string, string]>();
  const zero = g.int64([0], []);
  const one = g.int64([1], []);
  return (window) => {
    let pair = cache.get(window);
    if (pair) return pair;
    const w = g.int64([window], []);
    const fixed = body.op('Gather', [body.op('Shape', [rowMask]), one], { axis: 0 }); // T
    const query = body.op('Add', [fixed, iteration]);
    const pastVisible = body.op('Less', [
      body.op('Sub', [query, body.op('Range', [zero, fixed, one])]),
      w,
    ]);
    const past = body.op('Add', [
      pastBias,
      body.op('Where', [pastVisible, g.float([0]), g.float([MASK_VALUE])]),
    ]);
    const recentIndex = body.op('Range', [zero, body.op('Add', [iteration, one]), one]);
    const recentVisible = body.op('Less', [body.op('Sub', [iteration, recentIndex]), w]);
    const recent = body.op('Where', [recentVisible, g.float([0]), g.float([MASK_VALUE])]);
    pair = [past, recent];
    cache.set(window, pair);
    return pair;
  };
}
