import { readFile } from 'node:fs/promises';
import { InvalidArgumentError } from '@rlvr/core';
import { ModelLoadError } from '../errors/model-load-error.js';
import {
  alignUp,
  GGML_BLOCK,
  GGUF_DEFAULT_ALIGNMENT,
  GGUF_MAGIC,
  GGUF_READ_VERSIONS,
  type GgmlTypeName,
  GgufValueType,
  ggmlTypeName,
  VALUE_TYPE_SIZE,
} from './gguf-format.js';
import { decodeTensorData } from './gguf-tensor-data.js';

/** A metadata value as read: numbers (64-bit integers beyond 2^53 as bigint), strings, arrays. */
export type GgufValue = number | bigint | string | boolean | GgufValue[];

/** One tensor's entry in a GGUF file. */
export type GgufTensorInfo = {
  name: string;
  /** Dimensions innermost first, as GGUF stores them (`ne`): a `[out, in]` matrix is `[in, out]`. */
  dims: number[];
  /** Row-major shape (the reverse of `dims`), as Hugging Face / PyTorch would write it. */
  shape: number[];
  /** The ggml type id and its name (`undefined` for a type this package does not know). */
  type: number;
  typeName: GgmlTypeName;
  /** Offset of the data from the start of the file, and its length in bytes. */
  offset: number;
  byteLength: number;
};

/** The contents of a GGUF file (see {@link readGguf}). */
export type GgufFile = {
  version: number;
  /** Metadata in file order (`general.architecture`, `llama.block_count`, `tokenizer.ggml.tokens`, …). */
  metadata: Record<string, GgufValue>;
  /** The GGUF value type of each metadata key (see `GgufValueType`). */
  metadataTypes: Record<string, number>;
  tensors: GgufTensorInfo[];
  /** `general.alignment` (default 32) and the file offset of the tensor data section. */
  alignment: number;
  dataOffset: number;
  /**
   * The values of tensor `name` as float32 (F32, F16, BF16 and Q8_0 are decoded).
   * @throws {InvalidArgumentError} for a name not in the file; {@link ModelLoadError} for a tensor
   * type this package cannot decode.
   */
  readTensor(name: string): Float32Array;
};

const decoder = new TextDecoder('utf-8', { fatal: true });

/** A bounds-checked little-endian reader that throws ModelLoadError on truncation. */
class ByteReader {
  offset = 0;
  private readonly view: DataView;

  constructor(
    readonly bytes: Uint8Array,
    private readonly path: string,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  fail(reason: string): never {
    throw new ModelLoadError({ path: this.path, reason });
  }

  need(count: number, what: string): void {
    if (count > this.bytes.length - this.offset) {
      this.fail(
        `truncated GGUF file: ${what} needs ${count} bytes at offset ${this.offset}, ${this.bytes.length - this.offset} left`,
      );
    }
  }

  u32(what: string): number {
    this.need(4, what);
    const value = this.view.getUint32(this.offset, true);
    this.offset += 4;
    return value;
  }

  u64(what: string): number {
    this.need(8, what);
    const value = this.view.getBigUint64(this.offset, true);
    this.offset += 8;
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) this.fail(`${what} is too large (${value})`);
    return Number(value);
  }

  string(what: string): string {
    const length = this.u64(`${what} length`);
    this.need(length, what);
    const bytes = this.bytes.subarray(this.offset, this.offset + length);
    this.offset += length;
    try {
      return decoder.decode(bytes);
    } catch (error) {
      return this.fail(`${what} is not valid UTF-8 (${String(error)})`);
    }
  }

  scalar(type: number, what: string): GgufValue {
    if (type === GgufValueType.STRING) return this.string(what);
    const width = VALUE_TYPE_SIZE[type];
    if (width === undefined) this.fail(`${what} has an unknown value type ${type}`);
    this.need(width, what);
    const v = this.view;
    const at = this.offset;
    this.offset += width;
    switch (type) {
      case GgufValueType.UINT8:
        return v.getUint8(at);
      case GgufValueType.INT8:
        return v.getInt8(at);
      case GgufValueType.UINT16:
        return v.getUint16(at, true);
      case GgufValueType.INT16:
        return v.getInt16(at, true);
      case GgufValueType.UINT32:
        return v.getUint32(at, true);
      case GgufValueType.INT32:
        return v.getInt32(at, true);
      case GgufValueType.FLOAT32:
        return v.getFloat32(at, true);
      case GgufValueType.BOOL:
        return v.getUint8(at) !== 0;
      case GgufValueType.FLOAT64:
        return v.getFloat64(at, true);
      default: {
        const big =
          type === GgufValueType.UINT64 ? v.getBigUint64(at, true) : v.getBigInt64(at, true);
        const small = Number(big);
        return Number.isSafeInteger(small) ? small : big;
      }
    }
  }

  value(type: number, what: string): GgufValue {
    if (type !== GgufValueType.ARRAY) return this.scalar(type, what);
    const itemType = this.u32(`${what} item type`);
    const count = this.u64(`${what} count`);
    if (itemType === GgufValueType.ARRAY) this.fail(`${what} is an array of arrays (unsupported)`);
    const width = VALUE_TYPE_SIZE[itemType] ?? (itemType === GgufValueType.STRING ? 8 : undefined);
    if (width === undefined) this.fail(`${what} has an unknown item type ${itemType}`);
    this.need(count * width, `${what} (${count} items)`);
    const items: GgufValue[] = new Array(count);
    for (let index = 0; index < count; index++) items[index] = this.scalar(itemType, what);
    return items;
  }
}

function tensorInfo(
  reader: ByteReader,
  index: number,
): Omit<GgufTensorInfo, 'offset'> & {
  relative: number;
} {
  const name = reader.string(`tensor ${index} name`);
  const rank = reader.u32(`tensor '${name}' rank`);
  if (rank < 1 || rank > 4)
    reader.fail(`tensor '${name}' has ${rank} dimensions (expected 1 to 4)`);
  const dims: number[] = [];
  for (let axis = 0; axis < rank; axis++) dims.push(reader.u64(`tensor '${name}' dims`));
  const type = reader.u32(`tensor '${name}' type`);
  const relative = reader.u64(`tensor '${name}' offset`);
  const typeName = ggmlTypeName(type);
  const block = GGML_BLOCK[type];
  if (typeName === undefined || block === undefined) {
    reader.fail(`tensor '${name}' has an unsupported ggml type ${type}`);
  }
  const count = dims.reduce((product, dim) => product * dim, 1);
  if ((dims[0] as number) % block[0] !== 0) {
    reader.fail(`tensor '${name}' has ${dims[0]} values per row, not a multiple of ${block[0]}`);
  }
  const byteLength = (count / block[0]) * block[1];
  return { name, dims, shape: [...dims].reverse(), type, typeName, relative, byteLength };
}

/**
 * Parses a GGUF (v2 or v3) file held in memory; `path` only names it in errors. Tensor data is not
 * copied: {@link GgufFile.readTensor} decodes it on demand.
 *
 * @example
 * ```ts
 * const gguf = parseGguf(bytes);
 * gguf.metadata['general.architecture']; // 'llama'
 * ```
 * @throws {ModelLoadError} `MODEL_LOAD_FAILED` for a bad magic, an unsupported version, a truncated
 * file, an unknown value or tensor type, or tensors outside the file.
 */
export function parseGguf(bytes: Uint8Array, path = '<memory>'): GgufFile {
  if (!(bytes instanceof Uint8Array)) {
    throw new InvalidArgumentError({
      parameter: 'bytes',
      functionName: 'parseGguf',
      value: bytes,
      expected: 'a Uint8Array',
    });
  }
  const reader = new ByteReader(bytes, path);
  const magic = reader.u32('magic');
  if (magic !== GGUF_MAGIC) reader.fail(`not a GGUF file (magic 0x${magic.toString(16)})`);
  const version = reader.u32('version');
  if (!GGUF_READ_VERSIONS.includes(version)) {
    reader.fail(
      `unsupported GGUF version ${version} (expected ${GGUF_READ_VERSIONS.join(' or ')})`,
    );
  }
  const tensorCount = reader.u64('tensor count');
  const metadataCount = reader.u64('metadata count');
  const metadata: Record<string, GgufValue> = {};
  const metadataTypes: Record<string, number> = {};
  for (let index = 0; index < metadataCount; index++) {
    const key = reader.string(`metadata key ${index}`);
    const type = reader.u32(`metadata '${key}' type`);
    metadataTypes[key] = type;
    metadata[key] = reader.value(type, `metadata '${key}'`);
  }
  const alignment = Number(metadata['general.alignment'] ?? GGUF_DEFAULT_ALIGNMENT);
  if (!Number.isInteger(alignment) || alignment < 1) {
    reader.fail(`general.alignment is ${String(metadata['general.alignment'])}`);
  }
  const infos = [];
  for (let index = 0; index < tensorCount; index++) infos.push(tensorInfo(reader, index));
  const dataOffset = alignUp(reader.offset, alignment);
  const tensors: GgufTensorInfo[] = infos.map(({ relative, ...info }) => {
    const offset = dataOffset + relative;
    if (offset + info.byteLength > bytes.length) {
      reader.fail(
        `truncated GGUF file: tensor '${info.name}' needs bytes ${offset}..${offset + info.byteLength}, the file has ${bytes.length}`,
      );
    }
    return { ...info, offset };
  });
  const byName = new Map(tensors.map((tensor) => [tensor.name, tensor]));
  return {
    version,
    metadata,
    metadataTypes,
    tensors,
    alignment,
    dataOffset,
    readTensor(name: string): Float32Array {
      const tensor = byName.get(name);
      if (!tensor) {
        throw new InvalidArgumentError({
          parameter: 'name',
          functionName: 'readTensor',
          value: name,
          expected: 'the name of a tensor in the GGUF file',
        });
      }
      const count = tensor.dims.reduce((product, dim) => product * dim, 1);
      const data = bytes.subarray(tensor.offset, tensor.offset + tensor.byteLength);
      const values = decodeTensorData(data, tensor.type, count);
      if (!values) {
        return reader.fail(
          `tensor '${name}' has type ${tensor.typeName}, which cannot be decoded here (F32, F16, BF16, Q8_0)`,
        );
      }
      return values;
    },
  };
}

/**
 * Reads a GGUF file: header, metadata, tensor infos, and {@link GgufFile.readTensor} for the data.
 * The whole file is read into memory.
 *
 * @example
 * ```ts
 * const gguf = await readGguf('student/model.gguf');
 * gguf.tensors.map((tensor) => tensor.name); // ['token_embd.weight', 'blk.0.attn_norm.weight', …]
 * gguf.readTensor('output_norm.weight'); // Float32Array
 * ```
 * @throws {ModelLoadError} `MODEL_LOAD_FAILED` for an unreadable or malformed file (see
 * {@link parseGguf}).
 */
export async function readGguf(path: string): Promise<GgufFile> {
  if (typeof path !== 'string' || path.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'path',
      functionName: 'readGguf',
      value: path,
      expected: 'a file path',
    });
  }
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (error) {
    throw new ModelLoadError({
      path,
      reason: `cannot read the file (${error instanceof Error ? error.message : String(error)})`,
      cause: error,
    });
  }
  return parseGguf(bytes, path);
}
