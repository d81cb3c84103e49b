import onnxProto from 'onnx-proto';

/** The protobufjs classes of the ONNX schema (onnx-proto ships ONNX 1.10's schema). @internal */
export const { onnx } = onnxProto;

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Little-endian bytes of float32 data (a view, no copy, on little-endian hosts). @internal */
export function floatBytes(data: Float32Array): Uint8Array {
  if (LITTLE_ENDIAN) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const bytes = new Uint8Array(data.length * 4);
  const view = new DataView(bytes.buffer);
  for (let index = 0; index < data.length; index++)
    view.setFloat32(index * 4, data[index] as number, true);
  return bytes;
}

/** A float32 initializer whose data is produced at encoding time. @internal */
export type RawFloatInitializer = {
  name: string;
  dims: number[];
  length: number;
  fill: (target: Float32Array) => void;
};

// Protobuf field numbers from onnx.proto.
const MODEL_GRAPH = 7;
const GRAPH_INITIALIZER = 5;
const TENSOR_RAW_DATA = 9;
const TENSOR_DOC_STRING = 12;
const WIRE_LENGTH_DELIMITED = 2;

function varintSize(value: number): number {
  let size = 1;
  while (value >= 128) {
    value = Math.floor(value / 128);
    size++;
  }
  return size;
}

function writeVarint(out: Uint8Array, position: number, value: number): number {
  while (value >= 128) {
    out[position++] = (value % 128) | 0x80;
    value = Math.floor(value / 128);
  }
  out[position++] = value;
  return position;
}

function key(field: number): number {
  return (field << 3) | WIRE_LENGTH_DELIMITED;
}

/** Sizes of the optional padding field (`doc_string` of 0–3 characters, or none). */
const PADDING_OPTIONS = [0, 2, 3, 4, 5] as const;

type Entry = {
  initializer: RawFloatInitializer;
  head: Uint8Array;
  padding: number;
  tensorLength: number;
  rawOffset: number;
};

/**
 * Encodes `model` (without a graph) plus `graph` and its large float initializers as one ONNX
 * ModelProto, writing each initializer's float32 data straight into the output buffer through its
 * `fill` callback (no per-tensor copies, no protobufjs buffer of the weights). Protobuf allows the
 * fields of a message in any order and repeated fields to be split, so the graph is emitted as
 * `[small graph fields][initializer]*` and each initializer as `[dims, type, name][doc_string
 * padding][raw_data]`, where the padding (an empty-ish doc string) puts raw data at a 4-byte
 * boundary so it can be filled through a Float32Array view.
 */
export function encodeModel(
  model: onnxProto.onnx.IModelProto,
  graph: onnxProto.onnx.IGraphProto,
  raw: readonly RawFloatInitializer[],
): Uint8Array {
  const modelHead = onnx.ModelProto.encode({ ...model, graph: undefined }).finish();
  const graphHead = onnx.GraphProto.encode(graph).finish();
  const heads = raw.map((initializer) =>
    onnx.TensorProto.encode({
      name: initializer.name,
      dims: initializer.dims,
      dataType: onnx.TensorProto.DataType.FLOAT,
    }).finish(),
  );

  let graphVarint = 1;
  let entries: Entry[] = [];
  let graphLength = 0;
  for (;;) {
    entries = [];
    let position = modelHead.length + 1 + graphVarint + graphHead.length;
    for (const [index, initializer] of raw.entries()) {
      const head = heads[index] as Uint8Array;
      const rawLength = initializer.length * 4;
      let chosen: Entry | undefined;
      for (const padding of PADDING_OPTIONS) {
        const tensorLength = head.length + padding + 1 + varintSize(rawLength) + rawLength;
        const rawOffset =
          position +
          1 +
          varintSize(tensorLength) +
          head.length +
          padding +
          1 +
          varintSize(rawLength);
        if (rawOffset % 4 === 0 || !LITTLE_ENDIAN) {
          chosen = { initializer, head, padding, tensorLength, rawOffset };
          break;
        }
      }
      if (!chosen) throw new Error('unreachable: no padding aligns the tensor data');
      entries.push(chosen);
      position = chosen.rawOffset + rawLength;
    }
    graphLength = position - (modelHead.length + 1 + graphVarint);
    if (varintSize(graphLength) === graphVarint) break;
    graphVarint = varintSize(graphLength);
  }

  const total = modelHead.length + 1 + graphVarint + graphLength;
  const out = new Uint8Array(total);
  out.set(modelHead, 0);
  let position = modelHead.length;
  out[position++] = key(MODEL_GRAPH);
  position = writeVarint(out, position, graphLength);
  out.set(graphHead, position);
  position += graphHead.length;
  for (const entry of entries) {
    out[position++] = key(GRAPH_INITIALIZER);
    position = writeVarint(out, position, entry.tensorLength);
    out.set(entry.head, position);
    position += entry.head.length;
    if (entry.padding > 0) {
      out[position++] = key(TENSOR_DOC_STRING);
      const characters = entry.padding - 2;
      out[position++] = characters;
      for (let index = 0; index < characters; index++) out[position++] = 0x20;
    }
    out[position++] = key(TENSOR_RAW_DATA);
    const rawLength = entry.initializer.length * 4;
    position = writeVarint(out, position, rawLength);
    if (position !== entry.rawOffset) throw new Error('unreachable: layout mismatch');
    if (LITTLE_ENDIAN) {
      entry.initializer.fill(new Float32Array(out.buffer, position, entry.initializer.length));
    } else {
      const values = new Float32Array(entry.initializer.length);
      entry.initializer.fill(values);
      out.set(floatBytes(values), position);
    }
    position += rawLength;
  }
  if (position !== total) throw new Error('unreachable: size mismatch');
  return out;
}
