import {
  bfloat16BitsToFloat32,
  float16BitsToFloat32,
  float32ToBfloat16Bits,
  float32ToFloat16Bits,
} from '../safetensors/float16.js';
import { GgmlType } from './gguf-format.js';

/** Q8_0: blocks of 32 values, one float16 scale then 32 int8 quants (34 bytes). */
const Q8_BLOCK = 32;
const Q8_BYTES = 34;

/** gguf-py's `np_roundf`: round half away from zero. */
function roundHalfAway(value: number): number {
  return Math.sign(value) * Math.floor(Math.abs(value) + 0.5);
}

/**
 * Encodes float32 values as ggml `type` (F32, F16, BF16 or Q8_0, the last as llama.cpp's
 * `gguf-py` quantizes it: d = max|x| / 127 per block of 32, q = round(x / d)). Q8_0 needs a length
 * that is a multiple of 32. @internal
 */
export function encodeTensorData(values: Float32Array, type: number): Uint8Array {
  const count = values.length;
  if (type === GgmlType.F32) {
    const out = new Uint8Array(count * 4);
    const view = new DataView(out.buffer);
    for (let index = 0; index < count; index++) {
      view.setFloat32(index * 4, values[index] as number, true);
    }
    return out;
  }
  if (type === GgmlType.F16 || type === GgmlType.BF16) {
    const out = new Uint8Array(count * 2);
    const view = new DataView(out.buffer);
    const convert = type === GgmlType.F16 ? float32ToFloat16Bits : float32ToBfloat16Bits;
    for (let index = 0; index < count; index++) {
      view.setUint16(index * 2, convert(values[index] as number), true);
    }
    return out;
  }
  if (type === GgmlType.Q8_0) {
    const blocks = count / Q8_BLOCK;
    const out = new Uint8Array(blocks * Q8_BYTES);
    const view = new DataView(out.buffer);
    for (let block = 0; block < blocks; block++) {
      const start = block * Q8_BLOCK;
      let amax = 0;
      for (let index = 0; index < Q8_BLOCK; index++) {
        amax = Math.max(amax, Math.abs(values[start + index] as number));
      }
      const d = Math.fround(amax / 127);
      const inverse = d === 0 ? 0 : Math.fround(1 / d);
      const base = block * Q8_BYTES;
      view.setUint16(base, float32ToFloat16Bits(d), true);
      for (let index = 0; index < Q8_BLOCK; index++) {
        const q = roundHalfAway(Math.fround((values[start + index] as number) * inverse));
        view.setInt8(base + 2 + index, Math.max(-128, Math.min(127, q)));
      }
    }
    return out;
  }
  throw new Error(`encodeTensorData: unsupported ggml type ${type}`);
}

/**
 * Decodes `count` values of ggml `type` (F32, F16, BF16, Q8_0) from `bytes` to float32, or returns
 * undefined for a type this package cannot decode. @internal
 */
export function decodeTensorData(
  bytes: Uint8Array,
  type: number,
  count: number,
): Float32Array | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(count);
  if (type === GgmlType.F32) {
    for (let index = 0; index < count; index++) out[index] = view.getFloat32(index * 4, true);
  } else if (type === GgmlType.F16 || type === GgmlType.BF16) {
    const convert = type === GgmlType.F16 ? float16BitsToFloat32 : bfloat16BitsToFloat32;
    for (let index = 0; index < count; index++) {
      out[index] = convert(view.getUint16(index * 2, true));
    }
  } else if (type === GgmlType.Q8_0) {
    for (let block = 0; block < count / Q8_BLOCK; block++) {
      const base = block * Q8_BYTES;
      const d = float16BitsToFloat32(view.getUint16(base, true));
      for (let index = 0; index < Q8_BLOCK; index++) {
        out[block * Q8_BLOCK + index] = d * view.getInt8(base + 2 + index);
      }
    }
  } else {
    return undefined;
  }
  return out;
}
