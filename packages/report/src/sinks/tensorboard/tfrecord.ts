import { crc32c } from '@aws-crypto/crc32c';

const MASK_DELTA = 0xa282ead8;

/** TensorFlow's masked CRC-32C: `((crc >>> 15) | (crc << 17)) + 0xa282ead8`, modulo 2^32. @internal */
export function maskedCrc32c(data: Uint8Array): number {
  const crc = crc32c(data) >>> 0;
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + MASK_DELTA) >>> 0;
}

/**
 * One TFRecord: uint64 length (little-endian), masked CRC-32C of those 8 bytes, the data, masked
 * CRC-32C of the data (TensorFlow's `RecordWriter` framing). @internal
 */
export function tfRecord(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(8 + 4 + data.length + 4);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(data.length), true);
  view.setUint32(8, maskedCrc32c(out.subarray(0, 8)), true);
  out.set(data, 12);
  view.setUint32(12 + data.length, maskedCrc32c(data), true);
  return out;
}
