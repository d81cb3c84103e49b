import { randomBytes } from 'node:crypto';
import { type FileHandle, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** A unique temporary name next to `path` (same directory, so the final rename is atomic). */
export function temporarySibling(path: string, tag = 'tmp'): string {
  return join(
    dirname(path),
    `.${basename(path)}.${tag}-${process.pid}-${randomBytes(4).toString('hex')}`,
  );
}

/** fsyncs a directory so that a rename inside it is durable (ignored where unsupported). */
export async function syncDirectory(path: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(path, 'r');
    await handle.sync();
  } catch {
    // Some platforms (Windows) cannot open or fsync a directory; the rename is still atomic.
  } finally {
    await handle?.close();
  }
}

/**
 * Writes a file atomically: `write(handle)` fills a temporary file next to `path`, which is then
 * fsynced and renamed over `path`. On failure the temporary file is removed and `path` is untouched.
 */
export async function writeFileAtomic(
  path: string,
  write: (handle: FileHandle) => Promise<void>,
): Promise<void> {
  const temporary = temporarySibling(path);
  let handle: FileHandle | undefined;
  try {
    handle = await open(temporary, 'wx');
    await write(handle);
    await handle.sync();
    await handle.close();
    handle = undefined;
    await rename(temporary, path);
  } catch (error) {
    await handle?.close().catch(() => undefined);
    await rm(temporary, { force: true });
    throw error;
  }
  await syncDirectory(dirname(path));
}

/** Writes all of `bytes` through `handle` starting at `position` (handles short writes). */
export async function writeAll(
  handle: FileHandle,
  bytes: Uint8Array,
  position: number,
): Promise<number> {
  let written = 0;
  while (written < bytes.length) {
    const chunk = bytes.subarray(written, Math.min(bytes.length, written + 0x40000000));
    const { bytesWritten } = await handle.write(chunk, 0, chunk.length, position + written);
    written += bytesWritten;
  }
  return position + written;
}
