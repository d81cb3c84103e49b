import { GraphBuilder, OnnxDataType, valueInfo } from '@rlvr/model';

/**
 * Encodes a one-session ONNX graph (opset 17) of float32 inputs and outputs: `body` adds the nodes and returns the values of
 * `outputs`. @internal
 */
export function encodeGraph(
  name: string,
  inputs: [string, (string | number)[]][],
  outputs: string[],
  body: (g: GraphBuilder) => string[],
): Uint8Array {
  const g = new GraphBuilder();
  const results = body(g);
  results.forEach((result, index) => {
    g.add('Identity', [result], {}, [outputs[index]!]);
  });
  return g.encode({
    irVersion: 8,
    opset: 17,
    producerName: '@rlvr/trainer',
    graph: {
      name,
      input: inputs.map(([input, dims]) => valueInfo(input, OnnxDataType.FLOAT, dims)),
      output: outputs.map((output) => valueInfo(output, OnnxDataType.FLOAT)),
    },
  });
}
