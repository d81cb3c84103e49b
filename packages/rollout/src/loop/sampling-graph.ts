import { OnnxDataType as DataType, GraphBuilder, valueInfo } from '@rlvr/model';
import type * as Ort from 'onnxruntime-node';
import { emitSample, type NucleusMethod, type Sampling } from './loop-sampling.js';

/** The scalar inputs of a sampling step and their ONNX types. @internal */
export const SAMPLING_SCALARS: [keyof Sampling, number][] = [
  ['invTemperature', DataType.FLOAT],
  ['greedy', DataType.BOOL],
  ['filter', DataType.BOOL],
  ['listSize', DataType.INT64],
  ['cheapSize', DataType.INT64],
  ['middleSize', DataType.INT64],
  ['topP', DataType.FLOAT],
  ['minP', DataType.FLOAT],
  ['useMinP', DataType.BOOL],
  ['penalty', DataType.FLOAT],
  ['usePenalty', DataType.BOOL],
  ['modelLogprobs', DataType.BOOL],
];

/**
 * A graph that samples one token per row of `logits` `[R, vocab]` with {@link emitSample} (inputs
 * `logits`, `uniform` `[R,1]`, `seen` `[R, vocab]` and the {@link SAMPLING_SCALARS}; outputs
 * `token`, `logprob`): the sampling step of the loop graph alone, for tests and benches. @internal
 */
export function samplingGraph(vocab: number, nucleus: NucleusMethod = 'search'): Uint8Array {
  const g = new GraphBuilder();
  const names = Object.fromEntries(SAMPLING_SCALARS.map(([key]) => [key, key])) as Sampling;
  const [token, logprob] = emitSample(g, 'logits', 'uniform', 'seen', names, vocab, nucleus);
  g.add('Identity', [token], {}, ['token']);
  g.add('Identity', [logprob], {}, ['logprob']);
  return g.encode({
    irVersion: 8,
    opset: 17,
    producerName: 'rlvr-sampling',
    graph: {
      name: 'sample',
      input: [
        valueInfo('logits', DataType.FLOAT, ['R', vocab]),
        valueInfo('uniform', DataType.FLOAT, ['R', 1]),
        valueInfo('seen', DataType.BOOL, ['R', vocab]),
        ...SAMPLING_SCALARS.map(([key, type]) => valueInfo(key, type, [])),
      ],
      output: [
        valueInfo('token', DataType.INT64, ['R', 1]),
        valueInfo('logprob', DataType.FLOAT, ['R', 1]),
      ],
    },
  });
}

/** The scalar feeds of {@link samplingGraph} from their values. @internal */
export function samplingScalarFeeds(
  ort: typeof Ort,
  values: Record<keyof Sampling, number | boolean>,
): Record<string, Ort.Tensor> {
  const { Tensor } = ort;
  const feeds: Record<string, Ort.Tensor> = {};
  for (const [key, type] of SAMPLING_SCALARS) {
    const value = values[key];
    feeds[key] =
      type === DataType.FLOAT
        ? new Tensor('float32', Float32Array.of(value as number), [])
        : type === DataType.INT64
          ? new Tensor('int64', BigInt64Array.of(BigInt(value as number)), [])
          : new Tensor('bool', Uint8Array.of(value ? 1 : 0), []);
  }
  return feeds;
}
