/** What a verifier checks: a model response against a reference. */
export type VerifyInput = {
  response: string;
  /** Reference answer / tests; its shape is the verifier's own. */
  reference?: unknown;
  prompt?: string;
};

/** A verifier's structured verdict. Verifiers never throw on model output. */
export type VerifyResult = {
  /** Score in [0, 1] for graded checks, or `null` when the check does not apply (e.g. unparsable gold). */
  score: number | null;
  /** Binary verdict when the check is pass/fail. */
  correct?: boolean;
  /** What was extracted from the response (e.g. the final answer), if anything. */
  extracted?: string | null;
  /** Human-readable reason for the verdict. */
  reason: string;
  /** Named durations in milliseconds. */
  timings?: Record<string, number>;
  /** Reward-hacking or rule violations that were detected. */
  violations?: string[];
};

/** Anything that checks responses. */
export interface Verifier {
  readonly name: string;
  verify(input: VerifyInput): VerifyResult | Promise<VerifyResult>;
}
