import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NamedTensor } from '@rlvr/core';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelLoadError } from '../errors/model-load-error.js';
import { bfloat16BitsToFloat32, float16BitsToFloat32 } from './float16.js';
import {
  encodeSafetensors,
  parseSafetensors,
  readSafetensors,
  readSafetensorsHeader,
  writeSafetensors,
} from './safetensors.js';

/** Builds a safetensors file by hand, the way the reference (Python/Rust) implementation lays it out. */
function handMade(header: object, data: Uint8Array, headerPadding = 0): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header) + ' '.repeat(headerPadding));
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setUint32(0, json.length, true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

function expectLoadError(action: () => unknown, pattern: RegExp): void {
  let caught: unknown;
  try {
    action();
  } catch (error) {
    caught = error;
  }
  expect(ModelLoadError.isInstance(caught)).toBe(true);
  expect((caught as Error).message).toMatch(pattern);
  expect((caught as ModelLoadError).code).toBe('MODEL_LOAD_FAILED');
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rlvr-safetensors-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('parseSafetensors', () => {
  it('decodes a hand-made file with F32, F16 and BF16 tensors (little-endian)', () => {
    // F32 [2] = [1.5, -2]; F16 [3] = [1, -2, 65504]; BF16 [2,1] = [1, -5].
    const data = new Uint8Array([
      ...new Uint8Array(new Float32Array([1.5, -2]).buffer),
      0x00,
      0x3c,
      0x00,
      0xc0,
      0xff,
      0x7b,
      0x80,
      0x3f,
      0xa0,
      0xc0,
    ]);
    const bytes = handMade(
      {
        __metadata__: { format: 'pt' },
        a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] },
        b: { dtype: 'F16', shape: [3], data_offsets: [8, 14] },
        c: { dtype: 'BF16', shape: [2, 1], data_offsets: [14, 18] },
      },
      data,
      3,
    );
    const { tensors, metadata } = parseSafetensors(bytes);
    expect(metadata).toEqual({ format: 'pt' });
    expect(tensors.map((tensor) => [tensor.name, tensor.shape, [...tensor.data]])).toEqual([
      ['a', [2], [1.5, -2]],
      ['b', [3], [1, -2, 65504]],
      ['c', [2, 1], [1, -5]],
    ]);
    expect(parseSafetensors(bytes, { names: ['c'] }).tensors.map((tensor) => tensor.name)).toEqual([
      'c',
    ]);
  });

  it('round-trips F32 exactly and F16/BF16 to the rounded values (property)', () => {
    const tensorArbitrary = fc
      .array(fc.integer({ min: 0, max: 4 }), { minLength: 0, maxLength: 3 })
      .chain((shape) =>
        fc.record({
          shape: fc.constant(shape),
          values: fc.array(fc.float({ noNaN: true, min: -1000, max: 1000 }), {
            minLength: shape.reduce((product, dim) => product * dim, 1),
            maxLength: shape.reduce((product, dim) => product * dim, 1),
          }),
        }),
      );
    fc.assert(
      fc.property(fc.array(tensorArbitrary, { maxLength: 4 }), (specs) => {
        const tensors: NamedTensor[] = specs.map((spec, index) => ({
          name: `t${index}`,
          shape: spec.shape,
          data: Float32Array.from(spec.values),
        }));
        const f32 = parseSafetensors(encodeSafetensors(tensors));
        expect(f32.tensors).toEqual(tensors);
        for (const dtype of ['F16', 'BF16'] as const) {
          const bytes = encodeSafetensors(tensors, { dtype, metadata: { step: '3' } });
          const decoded = parseSafetensors(bytes);
          expect(decoded.metadata).toEqual({ step: '3' });
          const view = new DataView(bytes.buffer);
          const headerLength = view.getUint32(0, true);
          expect(headerLength % 8).toBe(0);
          let offset = 8 + headerLength;
          for (const [index, tensor] of decoded.tensors.entries()) {
            expect(tensor.shape).toEqual(tensors[index]?.shape);
            for (const value of tensor.data) {
              const bits = view.getUint16(offset, true);
              offset += 2;
              expect(value).toBe(
                dtype === 'F16' ? float16BitsToFloat32(bits) : bfloat16BitsToFloat32(bits),
              );
            }
          }
        }
      }),
      { seed: 42, numRuns: 150 },
    );
  });

  const valid = handMade(
    {
      a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] },
      b: { dtype: 'F32', shape: [1], data_offsets: [8, 12] },
    },
    new Uint8Array(12),
  );

  it.each([
    ['shorter than the prefix', new Uint8Array(5), /shorter than the 8-byte prefix/],
    ['truncated data', valid.subarray(0, valid.length - 1), /truncated/],
    ['truncated header', valid.subarray(0, 20), /truncated: header length/],
    [
      'a huge header length',
      (() => {
        const bytes = valid.slice();
        new DataView(bytes.buffer).setUint32(4, 1, true);
        return bytes;
      })(),
      /exceeds/,
    ],
    [
      'invalid JSON',
      handMade({}, new Uint8Array(0)).map((byte, index) => (index === 8 ? 0x5b : byte)),
      /JSON/,
    ],
    [
      'unknown dtype',
      handMade({ a: { dtype: 'F12', shape: [1], data_offsets: [0, 4] } }, new Uint8Array(4)),
      /unknown dtype/,
    ],
    [
      'unsupported dtype',
      handMade({ a: { dtype: 'I64', shape: [1], data_offsets: [0, 8] } }, new Uint8Array(8)),
      /only F32, F16, BF16/,
    ],
    [
      'size mismatch',
      handMade({ a: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } }, new Uint8Array(8)),
      /needs 12 bytes/,
    ],
    [
      'negative dim',
      handMade({ a: { dtype: 'F32', shape: [-1], data_offsets: [0, 0] } }, new Uint8Array(0)),
      /invalid shape/,
    ],
    [
      'a hole',
      handMade({ a: { dtype: 'F32', shape: [1], data_offsets: [4, 8] } }, new Uint8Array(8)),
      /hole/,
    ],
    [
      'overlap',
      handMade(
        {
          a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] },
          b: { dtype: 'F32', shape: [1], data_offsets: [4, 8] },
        },
        new Uint8Array(8),
      ),
      /overlaps/,
    ],
    [
      'trailing bytes',
      handMade({ a: { dtype: 'F32', shape: [1], data_offsets: [0, 4] } }, new Uint8Array(6)),
      /trailing/,
    ],
    ['bad metadata', handMade({ __metadata__: { a: 1 } }, new Uint8Array(0)), /__metadata__/],
  ])('rejects %s with a typed error', (_name, bytes, pattern) => {
    expectLoadError(() => parseSafetensors(bytes), pattern);
  });

  it('rejects a requested name that is not in the file', () => {
    expectLoadError(() => parseSafetensors(valid, { names: ['zzz'] }), /no tensor named 'zzz'/);
  });
});

describe('readSafetensors / writeSafetensors', () => {
  const tensors: NamedTensor[] = [
    { name: 'model.norm.weight', shape: [3], data: new Float32Array([1, 0.5, -0.25]) },
    { name: 'lm_head.weight', shape: [2, 3], data: new Float32Array([1, 2, 3, 4, 5, 6]) },
  ];

  it('writes atomically and reads back from disk, by name too', async () => {
    const path = join(dir, 'a.safetensors');
    const written = await writeSafetensors(path, tensors);
    const bytes = new Uint8Array(await readFile(path));
    expect(bytes.length).toBe(written);
    expect(bytes).toEqual(encodeSafetensors(tensors));
    expect((await readSafetensors(path)).tensors).toEqual(tensors);
    const header = await readSafetensorsHeader(path);
    expect(header.entries.map((entry) => [entry.name, entry.dtype, entry.dataOffsets])).toEqual([
      ['model.norm.weight', 'F32', [0, 12]],
      ['lm_head.weight', 'F32', [12, 36]],
    ]);
    const subset = await readSafetensors(path, { names: ['lm_head.weight'] });
    expect(subset.tensors).toEqual([tensors[1]]);
    // No temporary files left behind.
    expect((await readdir(dir)).filter((name) => name.includes('.tmp-'))).toEqual([]);
  });

  it('reads BF16 from disk', async () => {
    const path = join(dir, 'b.safetensors');
    await writeSafetensors(path, tensors, { dtype: 'BF16' });
    const { tensors: loaded } = await readSafetensors(path);
    expect([...(loaded[1]?.data ?? [])]).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('leaves an existing file untouched when the write fails validation', async () => {
    const path = join(dir, 'c.safetensors');
    await writeSafetensors(path, tensors);
    const before = await readFile(path);
    await expect(
      writeSafetensors(path, [{ name: 'x', shape: [2], data: new Float32Array(3) }]),
    ).rejects.toThrow(/tensors\[0\]\.data/);
    expect(await readFile(path)).toEqual(before);
  });

  it('throws typed errors for missing and truncated files', async () => {
    await expect(readSafetensors(join(dir, 'missing.safetensors'))).rejects.toSatisfy(
      (error: unknown) =>
        ModelLoadError.isInstance(error) && /ENOENT/.test((error as Error).message),
    );
    const path = join(dir, 'truncated.safetensors');
    const bytes = encodeSafetensors(tensors);
    await writeFile(path, bytes.subarray(0, bytes.length - 4));
    await expect(readSafetensors(path)).rejects.toSatisfy(
      (error: unknown) =>
        ModelLoadError.isInstance(error) && /truncated/.test((error as Error).message),
    );
    await expect(readSafetensors('')).rejects.toThrow(/parameter 'path'/);
  });

  it('validates tensors before writing', async () => {
    await expect(
      writeSafetensors(join(dir, 'd.safetensors'), [
        { name: 'a', shape: [1], data: new Float32Array(1) },
        { name: 'a', shape: [1], data: new Float32Array(1) },
      ]),
    ).rejects.toThrow(/a name used only once/);
    expect(() => encodeSafetensors(tensors, { dtype: 'F8' as 'F16' })).toThrow(/options\.dtype/);
  });
});
