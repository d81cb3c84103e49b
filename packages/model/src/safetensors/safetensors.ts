import { type FileHandle, open } from 'node:fs/promises';
import {
  InvalidArgumentError,
  type NamedTensor,
  ShapeMismatchError,
  validateOneOf,
  validateOptions,
} from '@rlvr/core';
import { ModelLoadError } from '../errors/model-load-error.js';
import { writeAll, writeFileAtomic } from '../io/atomic-write.js';
import { float16BitsToFloat32, float32ToBfloat16Bits, float32ToFloat16Bits } from './float16.js';

/** Element types this package reads (all converted to float32) and writes. */
export type SafetensorsDtype = 'F32' | 'F16' | 'BF16' | 'F64';

/** Element types {@link writeSafetensors} can write. */
export type SafetensorsWriteDtype = 'F32' | 'F16' | 'BF16';

/** One entry of a safetensors header. */
export type SafetensorsEntry = {
  name: string;
  dtype: string;
  shape: number[];
  /** Byte range `[begin, end)` relative to the start of the data section. */
  dataOffsets: [number, number];
};

/** A validated safetensors header. */
export type SafetensorsHeader = {
  /** Tensors in file order (sorted by their data offset). */
  entries: SafetensorsEntry[];
  /** The `__metadata__` string map (empty when absent). */
  metadata: Record<string, string>;
  /** Byte offset of the data section in the file (8 + header length). */
  dataStart: number;
};

/** The tensors and metadata of a safetensors file. */
export type SafetensorsContents = { tensors: NamedTensor[]; metadata: Record<string, string> };

const BYTES_PER_ELEMENT: Record<string, number> = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  I64: 8,
  I32: 4,
  I16: 2,
  I8: 1,
  U8: 1,
  U16: 2,
  U32: 4,
  U64: 8,
  BOOL: 1,
  F8_E4M3: 1,
  F8_E5M2: 1,
};
const READABLE: ReadonlySet<string> = new Set(['F32', 'F16', 'BF16', 'F64']);
const MAX_HEADER_BYTES = 100_000_000;
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const READ_CHUNK = 0x40000000;

function bad(path: string, reason: string, cause?: unknown): ModelLoadError {
  return new ModelLoadError({ path, reason, cause });
}

/**
 * Validates the header bytes of a safetensors file (`fileSize` is the whole file's size).
 * @internal
 */
export function parseSafetensorsHeader(
  prefix: Uint8Array,
  fileSize: number,
  path: string,
): SafetensorsHeader {
  if (fileSize < 8 || prefix.length < 8) {
    throw bad(path, `not a safetensors file: ${fileSize} bytes is shorter than the 8-byte prefix`);
  }
  const view = new DataView(prefix.buffer, prefix.byteOffset, prefix.byteLength);
  const headerLength = view.getUint32(0, true) + view.getUint32(4, true) * 2 ** 32;
  if (headerLength > MAX_HEADER_BYTES) {
    throw bad(path, `header length ${headerLength} exceeds the ${MAX_HEADER_BYTES}-byte limit`);
  }
  if (8 + headerLength > fileSize) {
    throw bad(
      path,
      `truncated: header length ${headerLength} runs past the end of the ${fileSize}-byte file`,
    );
  }
  if (prefix.length < 8 + headerLength) {
    throw bad(path, 'internal: header bytes not fully read');
  }
  let json: unknown;
  try {
    json = JSON.parse(
      new TextDecoder('utf-8', { fatal: true }).decode(prefix.subarray(8, 8 + headerLength)),
    );
  } catch (error) {
    throw bad(path, 'the header is not valid UTF-8 JSON', error);
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw bad(path, 'the header is not a JSON object');
  }
  const dataStart = 8 + headerLength;
  const dataSize = fileSize - dataStart;
  const metadata: Record<string, string> = {};
  const entries: SafetensorsEntry[] = [];
  for (const [name, value] of Object.entries(json as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        throw bad(path, '__metadata__ is not an object of strings');
      }
      for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
        if (typeof item !== 'string') throw bad(path, `__metadata__.${key} is not a string`);
        metadata[key] = item;
      }
      continue;
    }
    const entry = value as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    if (entry === null || typeof entry !== 'object') {
      throw bad(path, `header entry '${name}' is not an object`);
    }
    const { dtype, shape, data_offsets: offsets } = entry;
    if (typeof dtype !== 'string' || !(dtype in BYTES_PER_ELEMENT)) {
      throw bad(path, `tensor '${name}' has unknown dtype ${JSON.stringify(dtype)}`);
    }
    if (
      !Array.isArray(shape) ||
      !shape.every((dim) => typeof dim === 'number' && Number.isSafeInteger(dim) && dim >= 0)
    ) {
      throw bad(path, `tensor '${name}' has an invalid shape ${JSON.stringify(shape)}`);
    }
    if (
      !Array.isArray(offsets) ||
      offsets.length !== 2 ||
      !offsets.every((offset) => typeof offset === 'number' && Number.isSafeInteger(offset))
    ) {
      throw bad(path, `tensor '${name}' has invalid data_offsets ${JSON.stringify(offsets)}`);
    }
    const [begin, end] = offsets as [number, number];
    const expectedBytes =
      (shape as number[]).reduce((product, dim) => product * dim, 1) *
      (BYTES_PER_ELEMENT[dtype] as number);
    if (begin < 0 || end < begin || end - begin !== expectedBytes) {
      throw bad(
        path,
        `tensor '${name}' (${dtype} [${shape.join(', ')}]) needs ${expectedBytes} bytes but data_offsets are [${begin}, ${end}]`,
      );
    }
    if (end > dataSize) {
      throw bad(
        path,
        `truncated: tensor '${name}' ends at data byte ${end} but the file has only ${dataSize} data bytes`,
      );
    }
    entries.push({ name, dtype, shape: shape as number[], dataOffsets: [begin, end] });
  }
  entries.sort(
    (a, b) => a.dataOffsets[0] - b.dataOffsets[0] || a.dataOffsets[1] - b.dataOffsets[1],
  );
  let cursor = 0;
  for (const entry of entries) {
    if (entry.dataOffsets[0] !== cursor) {
      throw bad(
        path,
        entry.dataOffsets[0] < cursor
          ? `tensor '${entry.name}' overlaps the previous tensor`
          : `hole in the data section before tensor '${entry.name}'`,
      );
    }
    cursor = entry.dataOffsets[1];
  }
  if (cursor !== dataSize) {
    throw bad(path, `${dataSize - cursor} trailing bytes after the last tensor`);
  }
  return { entries, metadata, dataStart };
}

/** Converts raw little-endian bytes of `dtype` into float32 values. */
function decodeInto(dtype: string, bytes: Uint8Array, out: Float32Array): void {
  const count = out.length;
  if (dtype === 'F32') {
    if (LITTLE_ENDIAN) {
      new Uint8Array(out.buffer, out.byteOffset, out.byteLength).set(bytes);
      return;
    }
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let index = 0; index < count; index++) out[index] = view.getFloat32(index * 4, true);
    return;
  }
  if ((dtype === 'F16' || dtype === 'BF16') && LITTLE_ENDIAN && bytes.byteOffset % 2 === 0) {
    const halves = new Uint16Array(bytes.buffer, bytes.byteOffset, count);
    if (dtype === 'F16') {
      const table = float16Table();
      for (let index = 0; index < count; index++)
        out[index] = table[halves[index] as number] as number;
    } else {
      const bits = new Uint32Array(out.buffer, out.byteOffset, count);
      for (let index = 0; index < count; index++) bits[index] = (halves[index] as number) << 16;
    }
    return;
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (dtype === 'F16') {
    const table = float16Table();
    for (let index = 0; index < count; index++) {
      out[index] = table[view.getUint16(index * 2, true)] as number;
    }
  } else if (dtype === 'BF16') {
    const bits = new Uint32Array(out.buffer, out.byteOffset, count);
    for (let index = 0; index < count; index++) bits[index] = view.getUint16(index * 2, true) << 16;
  } else {
    for (let index = 0; index < count; index++) out[index] = view.getFloat64(index * 8, true);
  }
}

let float16Lookup: Float32Array | undefined;
function float16Table(): Float32Array {
  if (!float16Lookup) {
    float16Lookup = new Float32Array(65536);
    for (let bits = 0; bits < 65536; bits++) float16Lookup[bits] = float16BitsToFloat32(bits);
  }
  return float16Lookup;
}

function checkReadable(entry: SafetensorsEntry, path: string): void {
  if (!READABLE.has(entry.dtype)) {
    throw bad(
      path,
      `tensor '${entry.name}' has dtype ${entry.dtype}; only F32, F16, BF16 and F64 can be loaded as float32`,
    );
  }
}

function validateNames(names: unknown, functionName: string): Set<string> | undefined {
  if (names === undefined) return undefined;
  if (!Array.isArray(names) || !names.every((name) => typeof name === 'string')) {
    throw new InvalidArgumentError({
      parameter: 'options.names',
      functionName,
      value: names,
      expected: 'an array of tensor names',
    });
  }
  return new Set(names);
}

/** Options of {@link readSafetensors} and {@link parseSafetensors}. */
export type ReadSafetensorsOptions = {
  /** Load only these tensors (all by default); a name not in the file is an error. */
  names?: string[];
};

/**
 * Decodes an in-memory safetensors file. F32, F16, BF16 and F64 tensors come back as float32.
 *
 * @example
 * ```ts
 * const { tensors } = parseSafetensors(encodeSafetensors([{ name: 'w', shape: [2], data }]));
 * ```
 * @throws {ModelLoadError} `MODEL_LOAD_FAILED` for a malformed or truncated file or an unsupported
 * dtype.
 */
export function parseSafetensors(
  bytes: Uint8Array,
  options?: ReadSafetensorsOptions,
): SafetensorsContents {
  const functionName = 'parseSafetensors';
  if (!(bytes instanceof Uint8Array)) {
    throw new InvalidArgumentError({
      parameter: 'bytes',
      functionName,
      value: bytes,
      expected: 'a Uint8Array',
    });
  }
  const opts = validateOptions<ReadSafetensorsOptions>(options, {
    parameter: 'options',
    functionName,
    known: ['names'],
  });
  const wanted = validateNames(opts.names, functionName);
  const path = '<memory>';
  const header = parseSafetensorsHeader(bytes, bytes.length, path);
  const selected = selectEntries(header, wanted, path);
  const tensors = selected.map((entry) => {
    checkReadable(entry, path);
    const [begin, end] = entry.dataOffsets;
    const data = new Float32Array((end - begin) / (BYTES_PER_ELEMENT[entry.dtype] as number));
    decodeInto(entry.dtype, bytes.subarray(header.dataStart + begin, header.dataStart + end), data);
    return { name: entry.name, shape: [...entry.shape], data };
  });
  return { tensors, metadata: header.metadata };
}

function selectEntries(
  header: SafetensorsHeader,
  wanted: Set<string> | undefined,
  path: string,
): SafetensorsEntry[] {
  if (!wanted) return header.entries;
  const present = new Set(header.entries.map((entry) => entry.name));
  for (const name of wanted) {
    if (!present.has(name)) throw bad(path, `no tensor named '${name}' in the file`);
  }
  return header.entries.filter((entry) => wanted.has(entry.name));
}

async function readExactly(
  handle: FileHandle,
  target: Uint8Array,
  position: number,
  path: string,
): Promise<void> {
  let done = 0;
  while (done < target.length) {
    const length = Math.min(READ_CHUNK, target.length - done);
    const { bytesRead } = await handle.read(target, done, length, position + done);
    if (bytesRead === 0)
      throw bad(path, `truncated: unexpected end of file at byte ${position + done}`);
    done += bytesRead;
  }
}

/**
 * Reads and validates only the header of a safetensors file (8 + header bytes are read).
 *
 * @throws {ModelLoadError} `MODEL_LOAD_FAILED` for a missing, malformed or truncated file.
 */
export async function readSafetensorsHeader(path: string): Promise<SafetensorsHeader> {
  if (typeof path !== 'string' || path.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'path',
      functionName: 'readSafetensorsHeader',
      value: path,
      expected: 'a file path',
    });
  }
  const handle = await openForRead(path);
  try {
    return await readHeaderFrom(handle, path);
  } finally {
    await handle.close();
  }
}

async function openForRead(path: string): Promise<FileHandle> {
  try {
    return await open(path, 'r');
  } catch (error) {
    throw bad(
      path,
      `cannot open the file (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      error,
    );
  }
}

async function readHeaderFrom(handle: FileHandle, path: string): Promise<SafetensorsHeader> {
  const { size } = await handle.stat();
  const prefix = new Uint8Array(Math.min(size, 8));
  await readExactly(handle, prefix, 0, path);
  if (size < 8) return parseSafetensorsHeader(prefix, size, path);
  const view = new DataView(prefix.buffer);
  const headerLength = view.getUint32(0, true) + view.getUint32(4, true) * 2 ** 32;
  if (headerLength > MAX_HEADER_BYTES || 8 + headerLength > size) {
    return parseSafetensorsHeader(prefix, size, path);
  }
  const full = new Uint8Array(8 + headerLength);
  full.set(prefix);
  await readExactly(handle, full.subarray(8), 8, path);
  return parseSafetensorsHeader(full, size, path);
}

/**
 * Reads a safetensors file from disk, tensor by tensor with positioned reads (the file is never
 * held in memory as a whole; float32 data is read straight into the result arrays). F32, F16,
 * BF16 and F64 tensors come back as float32.
 *
 * @example
 * ```ts
 * const { tensors, metadata } = await readSafetensors('SmolLM2-135M/model.safetensors');
 * ```
 * @throws {ModelLoadError} `MODEL_LOAD_FAILED` for a missing, malformed or truncated file, an
 * unsupported dtype, or a requested name that is not in the file.
 */
export async function readSafetensors(
  path: string,
  options?: ReadSafetensorsOptions,
): Promise<SafetensorsContents> {
  const functionName = 'readSafetensors';
  if (typeof path !== 'string' || path.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'path',
      functionName,
      value: path,
      expected: 'a file path',
    });
  }
  const opts = validateOptions<ReadSafetensorsOptions>(options, {
    parameter: 'options',
    functionName,
    known: ['names'],
  });
  const wanted = validateNames(opts.names, functionName);
  const handle = await openForRead(path);
  try {
    const header = await readHeaderFrom(handle, path);
    const selected = selectEntries(header, wanted, path);
    for (const entry of selected) checkReadable(entry, path);
    const tensors: NamedTensor[] = [];
    let scratch = new Uint8Array(0);
    for (const entry of selected) {
      const [begin, end] = entry.dataOffsets;
      const byteLength = end - begin;
      const data = new Float32Array(byteLength / (BYTES_PER_ELEMENT[entry.dtype] as number));
      const position = header.dataStart + begin;
      if (entry.dtype === 'F32' && LITTLE_ENDIAN) {
        await readExactly(handle, new Uint8Array(data.buffer), position, path);
      } else {
        if (scratch.length < byteLength) scratch = new Uint8Array(byteLength);
        const bytes = scratch.subarray(0, byteLength);
        await readExactly(handle, bytes, position, path);
        decodeInto(entry.dtype, bytes, data);
      }
      tensors.push({ name: entry.name, shape: [...entry.shape], data });
    }
    return { tensors, metadata: header.metadata };
  } finally {
    await handle.close();
  }
}

/** Options of {@link writeSafetensors} and {@link encodeSafetensors}. */
export type WriteSafetensorsOptions = {
  /** Element type on disk (default `'F32'`); F16/BF16 round to nearest even. */
  dtype?: SafetensorsWriteDtype;
  /** String metadata stored under `__metadata__` (default `{ format: 'pt' }`, as PyTorch writes). */
  metadata?: Record<string, string>;
};

type PreparedHeader = { headerBytes: Uint8Array; dtype: SafetensorsWriteDtype; total: number };

function prepareHeader(
  tensors: readonly NamedTensor[],
  options: unknown,
  functionName: string,
): PreparedHeader {
  if (!Array.isArray(tensors)) {
    throw new InvalidArgumentError({
      parameter: 'tensors',
      functionName,
      value: tensors,
      expected: 'an array of { name, shape, data: Float32Array }',
    });
  }
  const opts = validateOptions<WriteSafetensorsOptions>(options, {
    parameter: 'options',
    functionName,
    known: ['dtype', 'metadata'],
  });
  const dtype = validateOneOf(opts.dtype ?? 'F32', ['F32', 'F16', 'BF16'] as const, {
    parameter: 'options.dtype',
    functionName,
  });
  const metadata = opts.metadata ?? { format: 'pt' };
  if (
    metadata === null ||
    typeof metadata !== 'object' ||
    !Object.values(metadata).every((value) => typeof value === 'string')
  ) {
    throw new InvalidArgumentError({
      parameter: 'options.metadata',
      functionName,
      value: metadata,
      expected: 'an object of string values',
    });
  }
  const itemSize = dtype === 'F32' ? 4 : 2;
  const header: Record<string, unknown> = { __metadata__: metadata };
  const seen = new Set<string>();
  let offset = 0;
  for (const [index, tensor] of (tensors as readonly NamedTensor[]).entries()) {
    if (
      tensor === null ||
      typeof tensor !== 'object' ||
      typeof tensor.name !== 'string' ||
      tensor.name.length === 0 ||
      tensor.name === '__metadata__' ||
      !Array.isArray(tensor.shape) ||
      !tensor.shape.every((dim) => Number.isSafeInteger(dim) && dim >= 0) ||
      !(tensor.data instanceof Float32Array)
    ) {
      throw new InvalidArgumentError({
        parameter: `tensors[${index}]`,
        functionName,
        value: tensor,
        expected: 'a tensor { name: string, shape: non-negative integers, data: Float32Array }',
      });
    }
    if (seen.has(tensor.name)) {
      throw new InvalidArgumentError({
        parameter: `tensors[${index}].name`,
        functionName,
        value: tensor.name,
        expected: 'a name used only once',
      });
    }
    seen.add(tensor.name);
    const size = tensor.shape.reduce((product, dim) => product * dim, 1);
    if (size !== tensor.data.length) {
      throw new ShapeMismatchError({
        parameter: `tensors[${index}].data`,
        functionName,
        expected: `${size} values (shape [${tensor.shape.join(', ')}])`,
        actual: `${tensor.data.length} values`,
      });
    }
    header[tensor.name] = {
      dtype,
      shape: tensor.shape,
      data_offsets: [offset, offset + size * itemSize],
    };
    offset += size * itemSize;
  }
  let json = JSON.stringify(header);
  const encoder = new TextEncoder();
  let jsonBytes = encoder.encode(json);
  const padding = (8 - (jsonBytes.length % 8)) % 8;
  json += ' '.repeat(padding);
  jsonBytes = encoder.encode(json);
  const headerBytes = new Uint8Array(8 + jsonBytes.length);
  const view = new DataView(headerBytes.buffer);
  view.setUint32(0, jsonBytes.length % 2 ** 32, true);
  view.setUint32(4, Math.floor(jsonBytes.length / 2 ** 32), true);
  headerBytes.set(jsonBytes, 8);
  return { headerBytes, dtype, total: headerBytes.length + offset };
}

function encodeTensor(data: Float32Array, dtype: SafetensorsWriteDtype): Uint8Array {
  if (dtype === 'F32') {
    if (LITTLE_ENDIAN) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    const bytes = new Uint8Array(data.length * 4);
    const view = new DataView(bytes.buffer);
    for (let index = 0; index < data.length; index++)
      view.setFloat32(index * 4, data[index] as number, true);
    return bytes;
  }
  const bytes = new Uint8Array(data.length * 2);
  const convert = dtype === 'F16' ? float32ToFloat16Bits : float32ToBfloat16Bits;
  if (LITTLE_ENDIAN) {
    const halves = new Uint16Array(bytes.buffer);
    for (let index = 0; index < data.length; index++)
      halves[index] = convert(data[index] as number);
    return bytes;
  }
  const view = new DataView(bytes.buffer);
  for (let index = 0; index < data.length; index++) {
    view.setUint16(index * 2, convert(data[index] as number), true);
  }
  return bytes;
}

/**
 * Encodes tensors as an in-memory safetensors file (tensors in the given order, header padded to 8
 * bytes as the reference implementation does).
 *
 * @throws {InvalidArgumentError} | {@link ShapeMismatchError} for a malformed tensor.
 */
export function encodeSafetensors(
  tensors: readonly NamedTensor[],
  options?: WriteSafetensorsOptions,
): Uint8Array {
  const { headerBytes, dtype, total } = prepareHeader(tensors, options, 'encodeSafetensors');
  const out = new Uint8Array(total);
  out.set(headerBytes);
  let position = headerBytes.length;
  for (const tensor of tensors) {
    const bytes = encodeTensor(tensor.data, dtype);
    out.set(bytes, position);
    position += bytes.length;
  }
  return out;
}

/**
 * Writes tensors to a safetensors file atomically (temporary file, fsync, rename), streaming one
 * tensor at a time. Returns the number of bytes written.
 *
 * @example
 * ```ts
 * await writeSafetensors('out/model.safetensors', checkpoint.tensors, { dtype: 'BF16' });
 * ```
 * @throws {InvalidArgumentError} | {@link ShapeMismatchError} for a malformed tensor; file-system
 * errors propagate with the temporary file removed.
 */
export async function writeSafetensors(
  path: string,
  tensors: readonly NamedTensor[],
  options?: WriteSafetensorsOptions,
): Promise<number> {
  const functionName = 'writeSafetensors';
  if (typeof path !== 'string' || path.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'path',
      functionName,
      value: path,
      expected: 'a file path',
    });
  }
  const { headerBytes, dtype, total } = prepareHeader(tensors, options, functionName);
  await writeFileAtomic(path, async (handle) => {
    let position = await writeAll(handle, headerBytes, 0);
    for (const tensor of tensors) {
      position = await writeAll(handle, encodeTensor(tensor.data, dtype), position);
    }
  });
  return total;
}
