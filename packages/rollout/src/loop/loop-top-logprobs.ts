import { OnnxDataType as DataType, type GraphBuilder, valueInfo } from '@rlvr/model';

/**
 * Emits the top-k logprobs of one step of the loop graph: `TopK` (ties to the lower id) of
 * `log softmax(logits)` at temperature 1 with no filtering — the model distribution, like
 * `model_logprobs`. `k` is an int64 scalar input; with `k` 0 an `If` skips the work and outputs
 * `[R, 0]` values. Returns `[values [R, k] float, ids [R, k] int64]`.
 * @internal
 */
export function emitTopLogprobs(
  g: GraphBuilder,
  b: GraphBuilder,
  logits: string,
  k: string,
): [string, string] {
  const wanted = b.op('Greater', [k, g.int64([0], [])]);
  const branch = (name: string, body: (c: GraphBuilder) => [string, string]) => {
    const c = b.child();
    const [values, ids] = body(c).map((value) => c.op('Identity', [value])) as [string, string];
    return {
      graph: c.graph(name, [], [valueInfo(values, DataType.FLOAT), valueInfo(ids, DataType.INT64)]),
    };
  };
  const [values, ids] = b.add(
    'If',
    [wanted],
    {
      then_branch: branch('top_logprobs_then', (c) => {
        const max = c.op('ReduceMax', [logits], { axes: [1], keepdims: 1 });
        const shifted = c.op('Sub', [logits, max]);
        const logSum = c.op('Log', [
          c.op('ReduceSum', [c.op('Exp', [shifted]), g.int64([1])], { keepdims: 1 }),
        ]);
        const logprobs = c.op('Sub', [shifted, logSum]);
        return c.add(
          'TopK',
          [logprobs, c.op('Reshape', [k, g.int64([1])])],
          { axis: 1, largest: 1, sorted: 1 },
          2,
        ) as [string, string];
      }),
      else_branch: branch('top_logprobs_else', (c) => {
        const empty = c.op('Slice', [logits, g.int64([0]), g.int64([0]), g.int64([1])]);
        return [empty, c.op('Cast', [empty], { to: DataType.INT64 })];
      }),
    },
    2,
  ) as [string, string];
  return [values, ids];
}

/**
 * Turns the loop's top-logprob scan outputs `[N − 1, R, k]` and the first step's `[R, k]` into
 * one `[R, N, k]` graph output. @internal
 */
export function emitTopLogprobColumns(
  g: GraphBuilder,
  first: string,
  scanned: string,
  output: string,
): void {
  g.add(
    'Concat',
    [g.op('Unsqueeze', [first, g.int64([1])]), g.op('Transpose', [scanned], { perm: [1, 0, 2] })],
    { axis: 1 },
    [output],
  );
}
