import onnxProto from 'onnx-proto';

/** The protobufjs classes of the ONNX schema (onnx-proto ships ONNX 1.10's schema). */
export const { onnx } = onnxProto;

/** ONNX element types used by the exporter. */
export const DataType = {
  FLOAT: 1,
  INT64: 7,
  BOOL: 9,
} as const;

type AttributeValue =
  | number
  | number[]
  | string
  | { float: number }
  | { tensor: onnxProto.onnx.ITensorProto };

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export function floatBytes(data: Float32Array): Uint8Array {
  if (LITTLE_ENDIAN) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const bytes = new Uint8Array(data.length * 4);
  const view = new DataView(bytes.buffer);
  for (let index = 0; index < data.length; index++)
    view.setFloat32(index * 4, data[index] as number, true);
  return bytes;
}

function int64Bytes(values: readonly number[]): Uint8Array {
  const bytes = new Uint8Array(values.length * 8);
  const view = new DataView(bytes.buffer);
  for (const [index, value] of values.entries()) view.setBigInt64(index * 8, BigInt(value), true);
  return bytes;
}

/** A float32 initializer whose data is produced at encoding time. */
export type RawFloatInitializer = {
  name: string;
  dims: number[];
  length: number;
  fill: (target: Float32Array) => void;
};

/** A small helper that accumulates ONNX nodes and initializers with unique names. */
export class GraphBuilder {
  readonly nodes: onnxProto.onnx.INodeProto[] = [];
  readonly initializers: onnxProto.onnx.ITensorProto[] = [];
  /** Large float initializers, written directly into the encoded model by `encodeModel`. */
  readonly rawFloatInitializers: RawFloatInitializer[] = [];
  /** Total bytes of initializer data (for the 2 GiB protobuf limit). */
  initializerBytes = 0;
  private counter = 0;
  private readonly int64Cache = new Map<string, string>();
  private readonly floatCache = new Map<number, string>();

  private fresh(prefix: string): string {
    this.counter += 1;
    return `${prefix}_${this.counter}`;
  }

  /** Adds a node; returns its output names (`outputs` of them, or the given names). */
  add(
    opType: string,
    inputs: string[],
    attributes: Record<string, AttributeValue> = {},
    outputs: number | string[] = 1,
    name?: string,
  ): string[] {
    const nodeName = name ?? this.fresh(`/${opType}`);
    const outputNames =
      typeof outputs === 'number'
        ? Array.from({ length: outputs }, (_, index) => `${nodeName}_output_${index}`)
        : outputs;
    const attribute = Object.entries(attributes).map(([key, value]) => toAttribute(key, value));
    this.nodes.push({ opType, input: inputs, output: outputNames, name: nodeName, attribute });
    return outputNames;
  }

  /** Adds a node with exactly one output and returns it. */
  op(
    opType: string,
    inputs: string[],
    attributes?: Record<string, AttributeValue>,
    name?: string,
  ): string {
    return this.add(opType, inputs, attributes, 1, name)[0] as string;
  }

  /**
   * Adds a float32 initializer whose values `fill` writes into the target array (length = product of
   * `dims`) when the model is encoded, straight into the output buffer (see `encodeModel`).
   */
  floatTensor(name: string, dims: number[], fill: (target: Float32Array) => void): string {
    const length = dims.reduce((product, dim) => product * dim, 1);
    this.rawFloatInitializers.push({ name, dims, length, fill });
    this.initializerBytes += length * 4;
    return name;
  }

  /** A float32 scalar constant (shared between uses). */
  floatScalar(value: number): string {
    const cached = this.floatCache.get(value);
    if (cached) return cached;
    const name = this.fresh('const_float');
    this.initializers.push({
      name,
      dataType: DataType.FLOAT,
      dims: [],
      rawData: floatBytes(new Float32Array([value])),
    });
    this.floatCache.set(value, name);
    return name;
  }

  /** An int64 constant of the given dims (a scalar for `dims = []`; shared between uses). */
  int64(values: readonly number[], dims: number[] = [values.length]): string {
    const key = `${dims.join('x')}:${values.join(',')}`;
    const cached = this.int64Cache.get(key);
    if (cached) return cached;
    const name = this.fresh('const_int64');
    this.initializers.push({ name, dataType: DataType.INT64, dims, rawData: int64Bytes(values) });
    this.int64Cache.set(key, name);
    return name;
  }
}

function toAttribute(name: string, value: AttributeValue): onnxProto.onnx.IAttributeProto {
  const { AttributeType } = onnx.AttributeProto;
  if (typeof value === 'number') return { name, type: AttributeType.INT, i: value };
  if (typeof value === 'string') {
    return { name, type: AttributeType.STRING, s: new TextEncoder().encode(value) };
  }
  if (Array.isArray(value)) return { name, type: AttributeType.INTS, ints: value };
  if ('float' in value) return { name, type: AttributeType.FLOAT, f: value.float };
  return { name, type: AttributeType.TENSOR, t: value.tensor };
}

/** A tensor-typed graph input/output with symbolic (string) or fixed (number) dims. */
export function valueInfo(
  name: string,
  elemType: number,
  dims: (string | number)[],
): onnxProto.onnx.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: {
          dim: dims.map((dim) => (typeof dim === 'string' ? { dimParam: dim } : { dimValue: dim })),
        },
      },
    },
  };
}
