import {
  alignUp,
  GGUF_DEFAULT_ALIGNMENT,
  GGUF_MAGIC,
  GGUF_VERSION,
  GgufValueType,
  type GgufValueTypeId,
} from './gguf-format.js';

/** One metadata value with its GGUF type (arrays name their item type). @internal */
export type GgufEntry =
  | { type: Exclude<GgufValueTypeId, 9 | 8 | 7>; value: number | bigint }
  | { type: 8; value: string }
  | { type: 7; value: boolean }
  | { type: 9; itemType: GgufValueTypeId; value: readonly (number | bigint | string | boolean)[] };

/** A tensor to write: GGUF name, dims innermost first (`ne`), ggml type and encoded bytes. @internal */
export type GgufTensorToWrite = { name: string; dims: number[]; type: number; bytes: Uint8Array };

const encoder = new TextEncoder();

/** A growable little-endian byte buffer. */
class ByteWriter {
  private buffer = new Uint8Array(1 << 16);
  private view = new DataView(this.buffer.buffer);
  length = 0;

  private reserve(extra: number): void {
    if (this.length + extra <= this.buffer.length) return;
    let size = this.buffer.length * 2;
    while (size < this.length + extra) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buffer.subarray(0, this.length));
    this.buffer = next;
    this.view = new DataView(next.buffer);
  }

  u8(value: number): void {
    this.reserve(1);
    this.view.setUint8(this.length, value);
    this.length += 1;
  }

  u32(value: number): void {
    this.reserve(4);
    this.view.setUint32(this.length, value, true);
    this.length += 4;
  }

  u64(value: number | bigint): void {
    this.reserve(8);
    this.view.setBigUint64(this.length, BigInt(value), true);
    this.length += 8;
  }

  scalar(type: GgufValueTypeId, value: number | bigint | string | boolean): void {
    const v = this.view;
    switch (type) {
      case GgufValueType.STRING:
        this.string(value as string);
        return;
      case GgufValueType.BOOL:
        this.u8(value ? 1 : 0);
        return;
      case GgufValueType.UINT64:
        this.u64(value as number | bigint);
        return;
      case GgufValueType.INT64:
        this.reserve(8);
        v.setBigInt64(this.length, BigInt(value as number | bigint), true);
        this.length += 8;
        return;
      case GgufValueType.FLOAT64:
        this.reserve(8);
        v.setFloat64(this.length, value as number, true);
        this.length += 8;
        return;
      default:
        this.fixed(type, value as number);
    }
  }

  private fixed(type: GgufValueTypeId, value: number): void {
    const width = type <= 1 ? 1 : type <= 3 ? 2 : 4;
    this.reserve(width);
    const at = this.length;
    const v = this.view;
    if (type === GgufValueType.UINT8) v.setUint8(at, value);
    else if (type === GgufValueType.INT8) v.setInt8(at, value);
    else if (type === GgufValueType.UINT16) v.setUint16(at, value, true);
    else if (type === GgufValueType.INT16) v.setInt16(at, value, true);
    else if (type === GgufValueType.UINT32) v.setUint32(at, value, true);
    else if (type === GgufValueType.INT32) v.setInt32(at, value, true);
    else v.setFloat32(at, value, true);
    this.length += width;
  }

  string(value: string): void {
    const bytes = encoder.encode(value);
    this.u64(bytes.length);
    this.bytes(bytes);
  }

  bytes(bytes: Uint8Array): void {
    this.reserve(bytes.length);
    this.buffer.set(bytes, this.length);
    this.length += bytes.length;
  }

  padTo(alignment: number): void {
    const target = alignUp(this.length, alignment);
    this.reserve(target - this.length);
    this.buffer.fill(0, this.length, target);
    this.length = target;
  }

  result(): Uint8Array {
    return this.buffer.subarray(0, this.length);
  }
}

/**
 * Serializes a GGUF v3 file: header, metadata (in the given order), tensor infos, then the tensor
 * data section at `general.alignment` (default 32), each tensor aligned. @internal
 */
export function encodeGguf(
  metadata: ReadonlyArray<readonly [string, GgufEntry]>,
  tensors: readonly GgufTensorToWrite[],
): Uint8Array {
  const alignmentEntry = metadata.find(([key]) => key === 'general.alignment')?.[1];
  const alignment = alignmentEntry ? Number(alignmentEntry.value) : GGUF_DEFAULT_ALIGNMENT;
  const out = new ByteWriter();
  out.u32(GGUF_MAGIC);
  out.u32(GGUF_VERSION);
  out.u64(tensors.length);
  out.u64(metadata.length);
  for (const [key, entry] of metadata) {
    out.string(key);
    out.u32(entry.type);
    if (entry.type === GgufValueType.ARRAY) {
      out.u32(entry.itemType);
      out.u64(entry.value.length);
      for (const item of entry.value) out.scalar(entry.itemType, item);
    } else {
      out.scalar(entry.type, entry.value);
    }
  }
  let offset = 0;
  for (const tensor of tensors) {
    out.string(tensor.name);
    out.u32(tensor.dims.length);
    for (const dim of tensor.dims) out.u64(dim);
    out.u32(tensor.type);
    out.u64(offset);
    offset = alignUp(offset + tensor.bytes.length, alignment);
  }
  out.padTo(alignment);
  for (const tensor of tensors) {
    out.bytes(tensor.bytes);
    out.padTo(alignment);
  }
  return out.result();
}
