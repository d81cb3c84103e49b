/**
 * A model that decodes a batch of sequences one token at a time (the ONNX session with its KV
 * cache, in practice). Rows are sequences; logits come back as `[rows, vocabSize]` float32.
 * @internal
 */
export interface BatchDecoder {
  readonly vocabSize: number;
  /**
   * Runs the prompts (one forward pass over the distinct prompts, left-padded) and returns the
   * next-token logits of `copies[i]` rows per prompt `i`, rows in prompt order.
   */
  start(prompts: readonly (readonly number[])[], copies: readonly number[]): Promise<Float32Array>;
  /** Feeds one token per current row and returns the next-token logits of every row. */
  next(tokens: Int32Array): Promise<Float32Array>;
  /** Keeps only the given rows (ascending indices into the current rows), freeing the others. */
  keepRows(rows: readonly number[]): void;
}
