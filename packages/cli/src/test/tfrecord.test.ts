import { describe, expect, it } from 'vitest';
import { crc32c, readTfRecords } from './tfrecord.js';

describe('crc32c', () => {
  it('should match the RFC 3720 check value', () => {
    expect(crc32c(new TextEncoder().encode('123456789'))).toBe(0xe3069283);
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa);
  });
});

describe('readTfRecords', () => {
  it('should reject a corrupted file', () => {
    expect(() => readTfRecords(new Uint8Array(5))).toThrow(/torn header/);
    expect(() => readTfRecords(new Uint8Array(16))).toThrow(/bad length CRC/);
  });
});
