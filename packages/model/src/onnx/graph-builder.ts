import { ErrorCode, RlvrError } from '@rlvr/core';
import type onnxProto from 'onnx-proto';
import { encodeModel, floatBytes, onnx, type RawFloatInitializer } from './encode-model.js';

export { floatBytes, onnx, type RawFloatInitializer };

/**
 * ONNX element types used by the graph builders (`TensorProto.DataType` values).
 *
 * Advanced API (for packages that build their own ONNX graphs); may change in a minor release.
 */
export const OnnxDataType = {
  FLOAT: 1,
  INT64: 7,
  BOOL: 9,
} as const;

/** @internal */
export const DataType = OnnxDataType;

/** An attribute value: INT, INTS, STRING, FLOAT (`{ float }`), TENSOR or GRAPH (a subgraph). */
export type OnnxAttributeValue =
  | number
  | number[]
  | string
  | { float: number }
  | { tensor: onnxProto.onnx.ITensorProto }
  | { graph: onnxProto.onnx.IGraphProto };

/** A tensor value description (graph input or output). */
export type OnnxValueInfo = onnxProto.onnx.IValueInfoProto;

/** A graph as protobufjs plain data (what {@link GraphBuilder.graph} returns). */
export type OnnxGraph = onnxProto.onnx.IGraphProto;

/** Largest single-file ONNX model protobuf can parse (2 GiB, less headroom for the graph). */
const MAX_PROTOBUF_BYTES = 2 ** 31 - 2 ** 24;

function int64Bytes(values: readonly number[]): Uint8Array {
  const bytes = new Uint8Array(values.length * 8);
  const view = new DataView(bytes.buffer);
  for (const [index, value] of values.entries()) view.setBigInt64(index * 8, BigInt(value), true);
  return bytes;
}

/** What a graph and all its subgraphs share: value names, initializers and constants. */
type Shared = {
  counter: number;
  readonly initializers: onnxProto.onnx.ITensorProto[];
  readonly rawFloatInitializers: RawFloatInitializer[];
  readonly initializerNames: Set<string>;
  readonly constants: Map<string, string>;
  initializerBytes: number;
};

/** What {@link GraphBuilder.encode} writes besides the graph's nodes and initializers. */
export type OnnxModelHeader = {
  /** ONNX IR version (8 for opset 17). */
  irVersion: number;
  /** ai.onnx opset (plain ops only). */
  opset: number;
  producerName: string;
  producerVersion?: string;
  docString?: string;
  /** The main graph's name, inputs and outputs. */
  graph: { name: string; input: OnnxValueInfo[]; output: OnnxValueInfo[] };
};

/**
 * Accumulates the nodes of one ONNX graph, or of a subgraph (a `Loop` body, an `If` branch: see
 * {@link GraphBuilder.child}), with unique value names. Every builder of one model shares its name
 * counter (ONNX forbids a subgraph value shadowing an outer one), its initializers and its
 * constant cache: weights and constants always live in the main graph, which subgraphs may read.
 * Large float initializers are written straight into the encoded model (no protobufjs copy) by
 * {@link GraphBuilder.encode}, which also enforces the 2 GiB single-file limit.
 *
 * Advanced API (for packages that build their own ONNX graphs, like `@rlvr/rollout`'s in-graph
 * sampling loop); may change in a minor release. Use {@link exportOnnx} for a standard decoder.
 *
 * @example
 * ```ts
 * const g = new GraphBuilder();
 * const y = g.op('Add', ['x', g.float([1])]);
 * g.add('Identity', [y], {}, ['y']);
 * const bytes = g.encode({ irVersion: 8, opset: 17, producerName: 'me', graph: {
 *   name: 'add_one', input: [valueInfo('x', OnnxDataType.FLOAT, [2])],
 *   output: [valueInfo('y', OnnxDataType.FLOAT, [2])] } });
 * ```
 */
export class GraphBuilder {
  /** The nodes of this (sub)graph, in insertion order. */
  readonly nodes: onnxProto.onnx.INodeProto[] = [];
  private readonly shared: Shared;

  /**
   * A builder for a new model's main graph or, with `parent`, for a subgraph of `parent`'s model
   * (the same as `parent.child()`).
   */
  constructor(parent?: GraphBuilder) {
    this.shared = parent?.shared ?? {
      counter: 0,
      initializers: [],
      rawFloatInitializers: [],
      initializerNames: new Set(),
      constants: new Map(),
      initializerBytes: 0,
    };
  }

  /** Small initializers (constants) of the main graph. @internal */
  get initializers(): readonly onnxProto.onnx.ITensorProto[] {
    return this.shared.initializers;
  }

  /** Float initializers written at encoding time. @internal */
  get rawFloatInitializers(): readonly RawFloatInitializer[] {
    return this.shared.rawFloatInitializers;
  }

  /** Total bytes of initializer data so far. */
  get initializerBytes(): number {
    return this.shared.initializerBytes;
  }

  /** A fresh value name `<prefix>_<n>`, unique in the model. */
  fresh(prefix: string): string {
    this.shared.counter += 1;
    return `${prefix}_${this.shared.counter}`;
  }

  /** A builder for a subgraph: its own nodes, this model's names, initializers and constants. */
  child(): GraphBuilder {
    return new GraphBuilder(this);
  }

  /**
   * Adds a node; returns its output names: `outputs` fresh ones (a number) or the given names.
   * `name` names the node (default: a fresh `<opType>_<n>`).
   */
  add(
    opType: string,
    inputs: string[],
    attributes: Record<string, OnnxAttributeValue> = {},
    outputs: number | string[] = 1,
    name?: string,
  ): string[] {
    const nodeName = name ?? this.fresh(opType);
    const outputNames =
      typeof outputs === 'number'
        ? Array.from({ length: outputs }, (_, index) => `${nodeName}_${index}`)
        : outputs;
    const attribute = Object.entries(attributes).map(([key, value]) => toAttribute(key, value));
    this.nodes.push({ opType, input: inputs, output: outputNames, name: nodeName, attribute });
    return outputNames;
  }

  /** Adds a node with one output and returns it. */
  op(
    opType: string,
    inputs: string[],
    attributes?: Record<string, OnnxAttributeValue>,
    name?: string,
  ): string {
    return this.add(opType, inputs, attributes, 1, name)[0] as string;
  }

  /**
   * A float32 initializer called `name` whose values `fill` writes (length = product of `dims`)
   * when the model is encoded, straight into the output buffer.
   */
  floatTensor(name: string, dims: number[], fill: (target: Float32Array) => void): string {
    const length = dims.reduce((product, dim) => product * dim, 1);
    this.claim(name);
    this.shared.rawFloatInitializers.push({ name, dims: [...dims], length, fill });
    this.shared.initializerBytes += length * 4;
    return name;
  }

  /** A float32 initializer with the values of `data` as they are (copied once, when encoding). */
  weight(name: string, dims: number[], data: Float32Array): string {
    return this.floatTensor(name, dims, (target) => target.set(data));
  }

  /** A float32 constant (a scalar when `dims` is `[]`, the default; shared between uses). */
  float(values: readonly number[], dims: number[] = []): string {
    return this.constant('float', values, dims, () => ({
      dataType: OnnxDataType.FLOAT,
      rawData: floatBytes(Float32Array.from(values)),
    }));
  }

  /** An int64 constant (a scalar when `dims` is `[]`; default 1-D; shared between uses). */
  int64(values: readonly number[], dims: number[] = [values.length]): string {
    return this.constant('int64', values, dims, () => ({
      dataType: OnnxDataType.INT64,
      rawData: int64Bytes(values),
    }));
  }

  /** A bool constant (default 1-D; shared between uses). */
  bool(values: readonly boolean[], dims: number[] = [values.length]): string {
    return this.constant('bool', values.map(Number), dims, () => ({
      dataType: OnnxDataType.BOOL,
      rawData: Uint8Array.from(values.map(Number)),
    }));
  }

  private claim(name: string): void {
    if (this.shared.initializerNames.has(name)) {
      throw new Error(`GraphBuilder: initializer '${name}' added twice`);
    }
    this.shared.initializerNames.add(name);
  }

  private constant(
    kind: string,
    values: readonly number[],
    dims: number[],
    make: () => onnxProto.onnx.ITensorProto,
  ): string {
    const key = `${kind}:${dims.join('x')}:${values.join(',')}`;
    const cached = this.shared.constants.get(key);
    if (cached) return cached;
    const name = this.fresh(`const_${kind}`);
    this.claim(name);
    const tensor = { ...make(), name, dims };
    this.shared.initializers.push(tensor);
    this.shared.initializerBytes += tensor.rawData?.length ?? 0;
    this.shared.constants.set(key, name);
    return name;
  }

  /** This builder's nodes as a subgraph (for a `Loop` body or an `If` branch attribute). */
  graph(name: string, inputs: OnnxValueInfo[], outputs: OnnxValueInfo[]): OnnxGraph {
    return { name, node: this.nodes, input: inputs, output: outputs };
  }

  /**
   * Encodes the model whose main graph this builder holds, writing float initializers straight
   * into the output buffer.
   * @throws {RlvrError} `UNAVAILABLE` when the initializers exceed the 2 GiB protobuf limit of a
   * single-file ONNX model (checked before anything is encoded).
   */
  encode(header: OnnxModelHeader, functionName = 'GraphBuilder.encode'): Uint8Array {
    const bytes = this.shared.initializerBytes;
    if (bytes > MAX_PROTOBUF_BYTES) {
      throw new RlvrError(
        ErrorCode.UNAVAILABLE,
        `${functionName}(): the weights take ${bytes} bytes, over the 2 GiB protobuf limit of a single-file ONNX model (external data is not supported yet)`,
      );
    }
    const model: onnxProto.onnx.IModelProto = {
      irVersion: header.irVersion,
      opsetImport: [{ domain: '', version: header.opset }],
      producerName: header.producerName,
      ...(header.producerVersion === undefined ? {} : { producerVersion: header.producerVersion }),
      ...(header.docString === undefined ? {} : { docString: header.docString }),
    };
    const graph: OnnxGraph = {
      ...header.graph,
      node: this.nodes,
      initializer: this.shared.initializers,
    };
    return encodeModel(model, graph, this.shared.rawFloatInitializers);
  }
}

function toAttribute(name: string, value: OnnxAttributeValue): onnxProto.onnx.IAttributeProto {
  const { AttributeType } = onnx.AttributeProto;
  if (typeof value === 'number') return { name, type: AttributeType.INT, i: value };
  if (typeof value === 'string') {
    return { name, type: AttributeType.STRING, s: new TextEncoder().encode(value) };
  }
  if (Array.isArray(value)) return { name, type: AttributeType.INTS, ints: value };
  if ('float' in value) return { name, type: AttributeType.FLOAT, f: value.float };
  if ('graph' in value) return { name, type: AttributeType.GRAPH, g: value.graph };
  return { name, type: AttributeType.TENSOR, t: value.tensor };
}

/**
 * A tensor value description: element type and symbolic (string) or fixed (number) dims; `dims`
 * undefined leaves the shape unknown (e.g. a `Loop` state whose rank is fixed by its initial value).
 *
 * Advanced API (see {@link GraphBuilder}).
 */
export function valueInfo(
  name: string,
  elemType: number,
  dims?: (string | number)[],
): OnnxValueInfo {
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
