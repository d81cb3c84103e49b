import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ErrorCode, InvalidArgumentError, RlvrError } from '@rlvr/core';

/**
 * Where policy weights live, by content: the trainer puts safetensors bytes and gets their sha256
 * digest; workers get the bytes back by digest. Weights never travel through Redis, only digests.
 * A local (or network-mounted) folder now; an S3-compatible store is a later adapter.
 */
export interface WeightStore {
  /** A description for logs (`file:///shared/weights`). */
  readonly location: string;
  /** Stores `bytes` (idempotent: the same bytes give the same digest and one file) and returns their digest. */
  put(bytes: Uint8Array): Promise<string>;
  /** The bytes of `digest`, checked against it. @throws {RlvrError} `MODEL_LOAD_FAILED` when missing or corrupt. */
  get(digest: string): Promise<Uint8Array>;
}

const DIGEST = /^[0-9a-f]{64}$/;

/** The sha256 of `bytes`, in hex. */
export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * A {@link WeightStore} in a folder shared by the trainer and the workers (local disk, NFS, a
 * mounted bucket). Files are `sha256-<digest>.safetensors`, written to a temporary name and
 * renamed, so a reader never sees a partial file; an existing file is never rewritten.
 */
export function createLocalWeightStore(dir: string): WeightStore {
  if (typeof dir !== 'string' || dir.length === 0) {
    throw new InvalidArgumentError({
      parameter: 'dir',
      functionName: 'createLocalWeightStore',
      value: dir,
      expected: 'a folder path',
    });
  }
  const root = resolve(dir);
  const fileOf = (digest: string) => join(root, `sha256-${digest}.safetensors`);
  return {
    location: `file://${root}`,
    async put(bytes) {
      const digest = sha256(bytes);
      const path = fileOf(digest);
      const exists = await stat(path).then(
        (info) => info.size === bytes.byteLength,
        () => false,
      );
      if (exists) return digest;
      await mkdir(root, { recursive: true });
      const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
      await writeFile(temporary, bytes);
      try {
        await rename(temporary, path);
      } catch (error) {
        await unlink(temporary).catch(() => undefined);
        throw error;
      }
      return digest;
    },
    async get(digest) {
      if (typeof digest !== 'string' || !DIGEST.test(digest)) {
        throw new InvalidArgumentError({
          parameter: 'digest',
          functionName: 'WeightStore.get',
          value: digest,
          expected: 'a sha256 digest (64 lowercase hex digits)',
        });
      }
      let bytes: Uint8Array;
      try {
        bytes = new Uint8Array(await readFile(fileOf(digest)));
      } catch (error) {
        throw new RlvrError(
          ErrorCode.MODEL_LOAD_FAILED,
          `Weights ${digest} are not in ${root}: is this folder shared with the trainer (--weights)?`,
          { cause: error },
        );
      }
      if (sha256(bytes) !== digest) {
        throw new RlvrError(
          ErrorCode.MODEL_LOAD_FAILED,
          `Weights file ${fileOf(digest)} does not match its digest (corrupt or partial copy)`,
        );
      }
      return bytes;
    },
  };
}
