/**
 * The distribution of a vote over its answer clusters, and the two numbers callers abstain on:
 * the margin (top share − runner-up share) and the entropy (nats). Internal.
 */

/** Shares, margin and entropy of cluster weights (given winner first). */
export type VoteDistribution = {
  /** Each cluster's share of the total weight, in the given order; sums to 1 (empty: none). */
  shares: number[];
  /** First share − second share (the first share when there is one cluster; 0 when none). */
  margin: number;
  /** −Σ p·ln p over the shares, in nats: 0 when unanimous, ln k for k equally heavy clusters. */
  entropy: number;
};

/**
 * Distribution statistics of cluster weights ordered winner first. With no weight cast (no
 * clusters, or every weight 0) there is no distribution: every share, the margin and the entropy
 * are 0 — and `margin: 0` reads as "abstain".
 */
export function voteDistribution(weights: readonly number[]): VoteDistribution {
  const total = weights.reduce((sum, weight) => sum + weight, 0);
  if (!(total > 0)) return { shares: weights.map(() => 0), margin: 0, entropy: 0 };
  const shares = weights.map((weight) => weight / total);
  let entropy = 0;
  for (const share of shares) if (share > 0) entropy -= share * Math.log(share);
  const margin = (shares[0] ?? 0) - (shares[1] ?? 0);
  return { shares, margin, entropy: Math.max(0, entropy) };
}
