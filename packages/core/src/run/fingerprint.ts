/**
 * Fingerprints of the settings that change a run's math, so that resume (and reuse of artefacts
 * such as trace files) can refuse a mismatch instead of silently mixing two runs.
 */

/** JSON with object keys sorted at every level (`undefined` members dropped), for hashing. */
export function stableStringify(value: unknown): string {
  if (value === undefined) return 'null';
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) return JSON.stringify(String(value));
    if (typeof value === 'bigint') return JSON.stringify(value.toString());
    if (typeof value === 'function') return '"[function]"';
    return JSON.stringify(value);
  }
  if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
    return stableStringify(Array.from(value as unknown as ArrayLike<number>));
  }
  if (Array.isArray(value)) return `[${value.map((item) => stableStringify(item)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, item]) => item !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${stableStringify(item)}`).join(',')}}`;
}

/**
 * 64-bit FNV-1a of a string's UTF-16 code units, as 16 hex digits. Not cryptographic: it detects
 * accidental changes (a different config, dataset or teacher), which is all a fingerprint is for.
 */
export function hashString(text: string): string {
  // Two 32-bit halves of a 64-bit FNV-1a (offset basis 0xcbf29ce484222325, prime 0x100000001b3).
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  for (let index = 0; index < text.length; index++) {
    lo = (lo ^ text.charCodeAt(index)) >>> 0;
    // (hi, lo) *= 0x100000001b3 = 2^40 + 0x1b3
    const loTimes = lo * 0x1b3;
    const carry = Math.floor(loTimes / 0x100000000);
    const newLo = loTimes >>> 0;
    const newHi = (hi * 0x1b3 + carry + ((lo << 8) >>> 0)) >>> 0;
    hi = newHi;
    lo = newLo;
  }
  return hi.toString(16).padStart(8, '0') + lo.toString(16).padStart(8, '0');
}

/** Hash of {@link stableStringify}(`value`): equal for equal settings, whatever the key order. */
export function fingerprint(value: unknown): string {
  return hashString(stableStringify(value));
}

/** Hash of numeric data (weights): exact bytes of the float32 values, in order. */
export function hashFloat32(chunks: Iterable<ArrayLike<number>>): string {
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  const scratch = new Float32Array(1);
  const bytes = new Uint8Array(scratch.buffer);
  for (const chunk of chunks) {
    for (let index = 0; index < chunk.length; index++) {
      scratch[0] = chunk[index]!;
      for (let b = 0; b < 4; b++) {
        lo = (lo ^ bytes[b]!) >>> 0;
        const loTimes = lo * 0x1b3;
        const carry = Math.floor(loTimes / 0x100000000);
        const newLo = loTimes >>> 0;
        hi = (hi * 0x1b3 + carry + ((lo << 8) >>> 0)) >>> 0;
        lo = newLo;
      }
    }
  }
  return hi.toString(16).padStart(8, '0') + lo.toString(16).padStart(8, '0');
}

/** One differing field of two settings objects. */
export type SettingsDifference = { field: string; saved: unknown; current: unknown };

/**
 * The fields (dotted paths) whose values differ between two settings objects, compared by
 * {@link stableStringify} (arrays compared whole). Empty when they are the same.
 */
export function diffSettings(saved: unknown, current: unknown, prefix = ''): SettingsDifference[] {
  const isObject = (v: unknown): v is Record<string, unknown> =>
    v !== null && typeof v === 'object' && !Array.isArray(v) && !ArrayBuffer.isView(v);
  if (isObject(saved) && isObject(current)) {
    const keys = [...new Set([...Object.keys(saved), ...Object.keys(current)])].sort();
    return keys.flatMap((key) =>
      diffSettings(saved[key], current[key], prefix === '' ? key : `${prefix}.${key}`),
    );
  }
  return stableStringify(saved) === stableStringify(current)
    ? []
    : [{ field: prefix === '' ? '(value)' : prefix, saved, current }];
}
