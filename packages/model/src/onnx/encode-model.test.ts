import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeModel } from './encode-model.js';
import { DataType, floatBytes, onnx, type RawFloatInitializer } from './graph-builder.js';

function normalize(bytes: Uint8Array): Record<string, unknown> {
  const decoded = onnx.ModelProto.toObject(onnx.ModelProto.decode(bytes), {
    bytes: Array,
    longs: Number,
    defaults: false,
  }) as { graph?: { initializer?: { docString?: string }[] } };
  for (const initializer of decoded.graph?.initializer ?? []) delete initializer.docString;
  return decoded;
}

describe('encodeModel', () => {
  it('is the same protobuf message as protobufjs encoding with raw_data (property)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            name: fc.string({ minLength: 1, maxLength: 150 }),
            length: fc.integer({ min: 0, max: 70 }),
          }),
          { maxLength: 8 },
        ),
        fc.string({ maxLength: 300 }),
        (specs, docString) => {
          const raw: RawFloatInitializer[] = specs.map((spec, index) => ({
            name: `${index}:${spec.name}`,
            dims: [spec.length],
            length: spec.length,
            fill: (target) => {
              for (let offset = 0; offset < target.length; offset++)
                target[offset] = index + offset / 8;
            },
          }));
          const model = { irVersion: 8, opsetImport: [{ domain: '', version: 17 }], docString };
          const graph = {
            name: 'g',
            node: [{ opType: 'Identity', input: ['x'], output: ['y'], name: 'n' }],
            initializer: [
              { name: 'small', dataType: DataType.INT64, dims: [0], rawData: new Uint8Array(0) },
            ],
          };
          const ours = encodeModel(model, graph, raw);
          const expected = onnx.ModelProto.encode({
            ...model,
            graph: {
              ...graph,
              initializer: [
                ...graph.initializer,
                ...raw.map((initializer) => {
                  const values = new Float32Array(initializer.length);
                  initializer.fill(values);
                  return {
                    name: initializer.name,
                    dims: initializer.dims,
                    dataType: DataType.FLOAT,
                    rawData: floatBytes(values),
                  };
                }),
              ],
            },
          }).finish();
          expect(normalize(ours)).toEqual(normalize(expected));
        },
      ),
      { seed: 17, numRuns: 60 },
    );
  });
});
