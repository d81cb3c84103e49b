/**
 * GGUF v3 constants (llama.cpp's `gguf-py/gguf/constants.py`): metadata value types and the ggml
 * tensor types this package writes or can size.
 */

/** `GGUF` read as a little-endian u32. @internal */
export const GGUF_MAGIC = 0x46554747;
/** The GGUF version this package writes (and the versions it reads). @internal */
export const GGUF_VERSION = 3;
export const GGUF_READ_VERSIONS: readonly number[] = [2, 3];
/** Default `general.alignment` of the tensor data section and of each tensor in it. */
export const GGUF_DEFAULT_ALIGNMENT = 32;

/** Metadata value types of GGUF. */
export const GgufValueType = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const;

/** One of {@link GgufValueType}'s values. */
export type GgufValueTypeId = (typeof GgufValueType)[keyof typeof GgufValueType];

/** Byte widths of the fixed-size metadata value types. @internal */
export const VALUE_TYPE_SIZE: Readonly<Record<number, number>> = {
  0: 1,
  1: 1,
  2: 2,
  3: 2,
  4: 4,
  5: 4,
  6: 4,
  7: 1,
  10: 8,
  11: 8,
  12: 8,
};

/** ggml tensor type ids (the ones this package writes, plus common ones it can size). */
export const GgmlType = {
  F32: 0,
  F16: 1,
  Q4_0: 2,
  Q4_1: 3,
  Q5_0: 6,
  Q5_1: 7,
  Q8_0: 8,
  Q8_1: 9,
  Q2_K: 10,
  Q3_K: 11,
  Q4_K: 12,
  Q5_K: 13,
  Q6_K: 14,
  Q8_K: 15,
  I8: 24,
  I16: 25,
  I32: 26,
  I64: 27,
  F64: 28,
  BF16: 30,
} as const;

/** Name of a ggml tensor type this package knows (`'F32'`, `'Q8_0'`, …). */
export type GgmlTypeName = keyof typeof GgmlType;

/** [values per block, bytes per block] of each known ggml type. @internal */
export const GGML_BLOCK: Readonly<Record<number, readonly [number, number]>> = {
  0: [1, 4],
  1: [1, 2],
  2: [32, 18],
  3: [32, 20],
  6: [32, 22],
  7: [32, 24],
  8: [32, 34],
  9: [32, 36],
  10: [256, 84],
  11: [256, 110],
  12: [256, 144],
  13: [256, 176],
  14: [256, 210],
  15: [256, 292],
  24: [1, 1],
  25: [1, 2],
  26: [1, 4],
  27: [1, 8],
  28: [1, 8],
  30: [1, 2],
};

/** The name of a ggml type id, or undefined for one this package does not know. @internal */
export function ggmlTypeName(id: number): GgmlTypeName | undefined {
  for (const [name, value] of Object.entries(GgmlType))
    if (value === id) return name as GgmlTypeName;
  return undefined;
}

/** `general.file_type` (llama.cpp's `LlamaFileType`) of each export dtype. @internal */
export const FILE_TYPE = { f32: 0, f16: 1, q8_0: 7, bf16: 32 } as const;

/** Token types of `tokenizer.ggml.token_type`. */
export const GgufTokenType = {
  NORMAL: 1,
  UNKNOWN: 2,
  CONTROL: 3,
  USER_DEFINED: 4,
  UNUSED: 5,
  BYTE: 6,
} as const;

/** Rounds `offset` up to a multiple of `alignment`. @internal */
export function alignUp(offset: number, alignment: number): number {
  return Math.ceil(offset / alignment) * alignment;
}
