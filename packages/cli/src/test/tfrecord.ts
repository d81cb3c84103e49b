/**
 * An independent reader of TensorFlow's TFRecord framing (for tests): each record is
 * `uint64 length | uint32 masked CRC-32C(length) | data | uint32 masked CRC-32C(data)`, little
 * endian, with TensorFlow's mask `((crc >>> 15) | (crc << 17)) + 0xa282ead8`.
 */
const TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32C (Castagnoli), bitwise-table implementation. */
export function crc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function masked(crc: number): number {
  return (((crc >>> 15) | (crc << 17)) + 0xa282ead8) >>> 0;
}

/** The records of a TFRecord file; throws on a bad length, CRC or a torn tail. */
export function readTfRecords(bytes: Uint8Array): Uint8Array[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const records: Uint8Array[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    if (offset + 12 > bytes.length) throw new Error(`torn header at byte ${offset}`);
    const length = Number(view.getBigUint64(offset, true));
    if (view.getUint32(offset + 8, true) !== masked(crc32c(bytes.subarray(offset, offset + 8)))) {
      throw new Error(`bad length CRC at byte ${offset}`);
    }
    const start = offset + 12;
    if (start + length + 4 > bytes.length) throw new Error(`torn record at byte ${offset}`);
    const data = bytes.subarray(start, start + length);
    if (view.getUint32(start + length, true) !== masked(crc32c(data))) {
      throw new Error(`bad data CRC at byte ${offset}`);
    }
    records.push(data);
    offset = start + length + 4;
  }
  return records;
}
