import onnxProto from 'onnx-proto';

/** The protobufjs classes of the ONNX schema (onnx-proto ships ONNX 1.10's schema). @internal */
export const { onnx } = onnxProto;

/** ONNX element types used by the loop graph. @internal */
export const DataType = { FLOAT: 1, INT64: 7, BOOL: 9 } as const;

type AttributeValue =
  | number
  | number[]
  | string
  | { float: number }
  | { graph: onnxProto.onnx.IGraphProto };

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Little-endian bytes of float32 data (a view, no copy, on little-endian hosts). @internal */
export function floatBytes(data: Float32Array): Uint8Array {
  if (LITTLE_ENDIAN) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const bytes = new Uint8Array(data.length * 4);
  const view = new DataView(bytes.buffer);
  for (let index = 0; index < data.length; index++) view.setFloat32(index * 4, data[index]!, true);
  return bytes;
}

function int64Bytes(values: readonly number[]): Uint8Array {
  const bytes = new Uint8Array(values.length * 8);
  const view = new DataView(bytes.buffer);
  values.forEach((value, index) => {
    view.setBigInt64(index * 8, BigInt(value), true);
  });
  return bytes;
}

/** Counter shared by a graph and its subgraphs, so that every value name is unique. */
type Names = { counter: number };

/**
 * Accumulates the nodes of one ONNX graph (or subgraph: a `Loop` body, an `If` branch) with
 * unique value names. Constants go to the root graph's initializers, which subgraphs may read.
 * @internal
 */
export class GraphBuilder {
  readonly nodes: onnxProto.onnx.INodeProto[] = [];
  readonly initializers: onnxProto.onnx.ITensorProto[];
  private readonly names: Names;
  private readonly constants: Map<string, string>;

  constructor(parent?: GraphBuilder) {
    this.names = parent?.names ?? { counter: 0 };
    this.initializers = parent?.initializers ?? [];
    this.constants = parent?.constants ?? new Map();
  }

  /** A fresh value name. */
  fresh(prefix: string): string {
    this.names.counter += 1;
    return `${prefix}_${this.names.counter}`;
  }

  /** A builder for a subgraph that shares names and constants with this one. */
  child(): GraphBuilder {
    return new GraphBuilder(this);
  }

  /** Adds a node; returns its output names. */
  add(
    opType: string,
    inputs: string[],
    attributes: Record<string, AttributeValue> = {},
    outputs: number | string[] = 1,
  ): string[] {
    const name = this.fresh(opType);
    const outputNames =
      typeof outputs === 'number'
        ? Array.from({ length: outputs }, (_, index) => `${name}_${index}`)
        : outputs;
    const attribute = Object.entries(attributes).map(([key, value]) => toAttribute(key, value));
    this.nodes.push({ opType, input: inputs, output: outputNames, name, attribute });
    return outputNames;
  }

  /** Adds a node with one output and returns it. */
  op(opType: string, inputs: string[], attributes?: Record<string, AttributeValue>): string {
    return this.add(opType, inputs, attributes)[0]!;
  }

  /** A float32 weight (data encoded as is, no copy until encoding). */
  weight(name: string, dims: number[], data: Float32Array): string {
    this.initializers.push({ name, dims, dataType: DataType.FLOAT, rawData: floatBytes(data) });
    return name;
  }

  /** A float32 constant (scalar when `dims` is `[]`; shared between uses). */
  float(values: readonly number[], dims: number[] = []): string {
    return this.constant('float', values, dims, () => ({
      dataType: DataType.FLOAT,
      rawData: floatBytes(Float32Array.from(values)),
    }));
  }

  /** An int64 constant (scalar when `dims` is `[]`; shared between uses). */
  int64(values: readonly number[], dims: number[] = [values.length]): string {
    return this.constant('int64', values, dims, () => ({
      dataType: DataType.INT64,
      rawData: int64Bytes(values),
    }));
  }

  /** A bool constant. */
  bool(values: readonly boolean[], dims: number[] = [values.length]): string {
    return this.constant('bool', values.map(Number), dims, () => ({
      dataType: DataType.BOOL,
      rawData: Uint8Array.from(values.map(Number)),
    }));
  }

  private constant(
    kind: string,
    values: readonly number[],
    dims: number[],
    make: () => onnxProto.onnx.ITensorProto,
  ): string {
    const key = `${kind}:${dims.join('x')}:${values.join(',')}`;
    const cached = this.constants.get(key);
    if (cached) return cached;
    const name = this.fresh(`const_${kind}`);
    this.initializers.push({ ...make(), name, dims });
    this.constants.set(key, name);
    return name;
  }

  /** This builder's nodes as a subgraph with the given inputs and outputs. */
  graph(
    name: string,
    inputs: onnxProto.onnx.IValueInfoProto[],
    outputs: onnxProto.onnx.IValueInfoProto[],
  ): onnxProto.onnx.IGraphProto {
    return { name, node: this.nodes, input: inputs, output: outputs };
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
  return { name, type: AttributeType.GRAPH, g: value.graph };
}

/** A tensor value description; `dims` undefined leaves the shape unknown. @internal */
export function valueInfo(
  name: string,
  elemType: number,
  dims?: (string | number)[],
): onnxProto.onnx.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: dims
          ? {
              dim: dims.map((dim) =>
                typeof dim === 'string' ? { dimParam: dim } : { dimValue: dim },
              ),
            }
          : undefined,
      },
    },
  };
}
