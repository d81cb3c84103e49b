import { InvalidArgumentError } from '@rlvr/core';

/** Readers of `config.json` fields that throw an `InvalidArgumentError` naming `config.<field>`. @internal */
export type FieldReader = {
  readonly functionName: string;
  fail(field: string, value: unknown, expected: string): never;
  positiveInteger(field: string, fallback?: number): number;
  positiveNumber(field: string, fallback: number): number;
  boolean(field: string, fallback: boolean): boolean;
  tokenId(field: string): number | null;
};

/** A {@link FieldReader} over the raw object `raw`. @internal */
export function fieldReader(raw: Record<string, unknown>, functionName: string): FieldReader {
  const fail = (field: string, value: unknown, expected: string): never => {
    throw new InvalidArgumentError({ parameter: `config.${field}`, functionName, value, expected });
  };
  return {
    functionName,
    fail,
    positiveInteger(field, fallback) {
      const value = raw[field] ?? fallback;
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
        fail(field, value, 'a positive integer');
      }
      return value as number;
    },
    positiveNumber(field, fallback) {
      const value = raw[field] ?? fallback;
      if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
        fail(field, value, 'a finite number > 0');
      }
      return value as number;
    },
    boolean(field, fallback) {
      const value = raw[field] ?? fallback;
      if (typeof value !== 'boolean') fail(field, value, 'a boolean');
      return value as boolean;
    },
    tokenId(field) {
      const value = raw[field] ?? null;
      if (value === null) return null;
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
        fail(field, value, 'a non-negative integer token id or null');
      }
      return value as number;
    },
  };
}

/** `true` for a plain object (not null, not an array). @internal */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
