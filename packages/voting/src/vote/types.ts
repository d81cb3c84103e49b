/**
 * One sample to vote over: its text, or an object with the text and what weighted voting needs.
 */
export type VoteSample =
  | string
  | {
      text: string;
      /** Explicit voting weight (≥ 0), used by `weighting: 'provided'`. */
      weight?: number;
      /** Per-token logprobs of the completion, used by the logprob weightings. */
      logprobs?: readonly number[];
    };

/** Pulls the final answer out of a sample's text; `null` when there is no usable answer. */
export type ExtractFn = (text: string) => string | null;

/** Decides whether two extracted answers are the same answer. Should be symmetric. */
export type EqualsFn = (a: string, b: string) => boolean;

/** How much each sample's vote counts. */
export type Weighting =
  /** Every sample counts 1 (plain self-consistency). */
  | 'uniform'
  /** The sample's `weight` field (or `options.weights[i]`). */
  | 'provided'
  /** exp(Σ logprobs − max over samples): relative sequence probability. */
  | 'sequence-logprob'
  /** exp(mean token logprob): length-normalized confidence. */
  | 'mean-logprob';

/** One answer cluster: samples whose answers are equivalent. */
export type VoteCluster = {
  /** The cluster's representative answer (the first member's extracted answer). */
  answer: string;
  /** Indices (into the input samples) of the members, in input order. */
  members: number[];
  /** Number of members. */
  count: number;
  /** Total voting weight of the members. */
  weight: number;
  /** The cluster's share of the total voting weight, in [0, 1]; the shares sum to 1 (0 with no weight cast). */
  share: number;
};

/** The outcome of a vote. */
export type VoteResult = {
  /** The winning answer, or `null` when no sample had a usable answer. */
  answer: string | null;
  /** The winner's share of the total voting weight, in [0, 1] (its confidence). */
  share: number;
  /**
   * All clusters, winner first, ordered by the tie rule (weight, then count, then first
   * appearance); their `share`s are the distribution of the vote over answers.
   */
  clusters: VoteCluster[];
  /**
   * Winner's share − runner-up's share, in [0, 1] (the winner's share when it is the only answer;
   * 0 for a tie or when no sample voted). Abstain below a threshold.
   */
  margin: number;
  /**
   * Entropy of the cluster shares in nats, −Σ p·ln p: 0 when unanimous (or no votes), ln k for k
   * equally heavy answers. Abstain above a threshold.
   */
  entropy: number;
  /** Samples that voted (had a usable answer). */
  votes: number;
  /** Total weight of the samples that voted. */
  totalWeight: number;
  /** How many samples were discarded (no answer, empty, or hedged between answers). */
  discarded: number;
  /** Their indices. */
  discardedIndices: number[];
  /** Extracted answer per input sample (`null` for discarded ones). */
  extracted: (string | null)[];
};
