import type { TopLogprob } from '@rlvr/core';

/**
 * The `k` most likely tokens of `log softmax(logits[offset … offset + size))` (the model
 * distribution at temperature 1, no filtering), in float64: most likely first, ties to the lower
 * id (ONNX `TopK`'s rule, so both engines agree). `k` is clamped to `size`.
 *
 * @example
 * ```ts
 * topLogprobsOf(Float32Array.of(0, Math.log(3)), 0, 2, 1); // [{ tokenId: 1, logprob: log(0.75) }]
 * ```
 */
export function topLogprobsOf(
  logits: ArrayLike<number>,
  offset: number,
  size: number,
  k: number,
): TopLogprob[] {
  const count = Math.min(k, size);
  // one pass selects the top `count` ids into a sorted buffer: ids arrive ascending, so a later id
  // only passes an earlier one with a strictly larger logit (ties stay with the lower id)
  const ids = new Int32Array(count);
  let filled = 0;
  let worst = Number.NEGATIVE_INFINITY;
  for (let index = 0; index < size; index++) {
    const value = logits[offset + index]!;
    if (filled === count && !(value > worst)) continue;
    let at = filled < count ? filled++ : count - 1;
    while (at > 0 && value > logits[offset + ids[at - 1]!]!) {
      ids[at] = ids[at - 1]!;
      at--;
    }
    ids[at] = index;
    if (filled === count) worst = logits[offset + ids[count - 1]!]!;
  }
  // the best id holds the maximum: one more pass for the normalizer
  const max = logits[offset + ids[0]!]!;
  let sum = 0;
  for (let index = 0; index < size; index++) sum += Math.exp(logits[offset + index]! - max);
  const logSum = max + Math.log(sum);
  return Array.from(ids, (tokenId) => ({ tokenId, logprob: logits[offset + tokenId]! - logSum }));
}

/**
 * Reads position `at` of the loop graph's `[rows · steps, k]` top-logprob outputs. @internal
 */
export function readTopLogprobs(
  values: Float32Array,
  ids: BigInt64Array,
  at: number,
  k: number,
): TopLogprob[] {
  const top: TopLogprob[] = [];
  for (let index = at * k; index < (at + 1) * k; index++)
    top.push({ tokenId: Number(ids[index]!), logprob: values[index]! });
  return top;
}
