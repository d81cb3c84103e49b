import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { ErrorCode, InvalidArgumentError, OverwriteRefusedError, RlvrError } from '@rlvr/core';
import type { IfExists } from './metrics-sink.js';

function statOf(path: string) {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

function lastByte(path: string, size: number): number {
  const fd = openSync(path, 'r');
  try {
    const byte = Buffer.alloc(1);
    readSync(fd, byte, 0, 1, size - 1);
    return byte[0]!;
  } finally {
    closeSync(fd);
  }
}

/**
 * A file a sink writes, with the "never lose data" rule built in: existence is checked when the
 * sink is created (refused unless `ifExists` allows it), the file is created on the first write
 * (exclusively with `'refuse'`, so a file that appeared in between is refused too), and only a
 * file this object created, or one the caller allowed to be overwritten, may later be replaced
 * whole ({@link OwnedFile.replace}). @internal
 */
export class OwnedFile {
  private fd: number | undefined;
  private closed = false;
  /** The existing file's size when created with `ifExists: 'append'` (0 otherwise). */
  readonly existingBytes: number;
  /** Whether an appended-to file ends without a newline (a torn last line). */
  readonly endsMidLine: boolean;

  constructor(
    readonly path: string,
    private readonly ifExists: IfExists,
    private readonly context: { functionName: string; parameter: string },
  ) {
    const info = statOf(path);
    if (info?.isDirectory()) {
      throw new InvalidArgumentError({
        parameter: context.parameter,
        functionName: context.functionName,
        value: path,
        expected: 'the path of a file (this is a folder)',
      });
    }
    if (info !== undefined && ifExists === 'refuse') this.refuse();
    this.existingBytes = info !== undefined && ifExists === 'append' ? info.size : 0;
    this.endsMidLine = this.existingBytes > 0 && lastByte(path, this.existingBytes) !== 0x0a;
  }

  private refuse(): never {
    throw new OverwriteRefusedError({
      path: this.path,
      reason: 'the file exists and was not created by this run',
      allowWith: "ifExists: 'overwrite' (replaces it) or ifExists: 'append'",
      functionName: this.context.functionName,
    });
  }

  private open(): number {
    if (this.fd !== undefined) return this.fd;
    mkdirSync(dirname(this.path), { recursive: true });
    const flags = this.ifExists === 'refuse' ? 'wx' : this.ifExists === 'append' ? 'a' : 'w';
    try {
      this.fd = openSync(this.path, flags);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') this.refuse();
      throw error;
    }
    return this.fd;
  }

  /** Whether the first write happened (the file is ours, or was allowed to be replaced). */
  get opened(): boolean {
    return this.fd !== undefined;
  }

  /** Appends bytes (opening the file on the first call). */
  append(data: string | Uint8Array): void {
    this.assertOpen();
    const fd = this.open();
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    let offset = 0;
    while (offset < bytes.length) {
      offset += writeSync(fd, bytes, offset, bytes.length - offset);
    }
  }

  /**
   * Replaces the whole file with `data`, atomically (temporary sibling, fsync, rename). Only
   * after the first write, so the file is one this object created or was allowed to overwrite;
   * an appended-to file (`ifExists: 'append'`) is never replaced.
   */
  replace(data: string): void {
    this.assertOpen();
    if (this.ifExists === 'append' || this.fd === undefined) {
      throw new Error(`internal: ${this.path} may not be replaced`);
    }
    const temporary = join(
      dirname(this.path),
      `.${basename(this.path)}.tmp-${process.pid}-${Date.now()}`,
    );
    const fd = openSync(temporary, 'wx');
    try {
      writeSync(fd, data);
      fsyncSync(fd);
    } catch (error) {
      closeSync(fd);
      rmSync(temporary, { force: true });
      throw error;
    }
    closeSync(fd);
    renameSync(temporary, this.path);
    closeSync(this.fd);
    this.fd = openSync(this.path, 'a');
  }

  sync(): void {
    if (this.fd !== undefined) fsyncSync(this.fd);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.fd !== undefined) {
      fsyncSync(this.fd);
      closeSync(this.fd);
      this.fd = undefined;
    }
  }

  private assertOpen(): void {
    if (this.closed) {
      throw new RlvrError(
        ErrorCode.UNAVAILABLE,
        `${this.context.functionName}: '${this.path}' is closed`,
      );
    }
  }
}
