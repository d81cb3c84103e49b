import { describe, expect, it } from 'vitest';
import {
  diffSettings,
  fingerprint,
  hashFloat32,
  hashString,
  stableStringify,
} from './fingerprint.js';

describe('fingerprint', () => {
  it('should match the FNV-1a 64 reference values', () => {
    // Reference values of 64-bit FNV-1a (offset 0xcbf29ce484222325, prime 0x100000001b3).
    expect(hashString('')).toBe('cbf29ce484222325');
    expect(hashString('a')).toBe('af63dc4c8601ec8c');
    expect(hashString('foobar')).toBe('85944171f73967e8');
  });

  it('should not depend on key order and should see every value', () => {
    expect(fingerprint({ a: 1, b: { c: [1, 2], d: 'x' } })).toBe(
      fingerprint({ b: { d: 'x', c: [1, 2] }, a: 1 }),
    );
    expect(fingerprint({ a: 1 })).not.toBe(fingerprint({ a: 2 }));
    expect(fingerprint({ a: 1, b: undefined })).toBe(fingerprint({ a: 1 }));
    expect(stableStringify(new Float32Array([1, 2]))).toBe('[1,2]');
  });

  it('should hash float32 bytes exactly', () => {
    expect(hashFloat32([new Float32Array([1, 2])])).toBe(hashFloat32([[1], [2]]));
    expect(hashFloat32([[1, 2]])).not.toBe(hashFloat32([[1, 2.0000002]]));
  });

  it('should list the differing fields by dotted path', () => {
    expect(
      diffSettings(
        { groupSize: 8, loss: { beta: 0, eps: 0.2 } },
        { groupSize: 4, loss: { beta: 0, eps: 0.3 } },
      ),
    ).toEqual([
      { field: 'groupSize', saved: 8, current: 4 },
      { field: 'loss.eps', saved: 0.2, current: 0.3 },
    ]);
    expect(diffSettings({ a: [1, 2] }, { a: [1, 2] })).toEqual([]);
  });
});
