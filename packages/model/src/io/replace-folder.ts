import { mkdir, readdir, rename, rm, rmdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { syncDirectory } from './atomic-write.js';

/**
 * Which entries of a folder belong to the writer: `top(name)` for a top-level entry, and for a
 * sub-folder listed in `folders`, `nested[folder](name)` for its entries (the sub-folder itself is
 * shared: other entries in it are not the writer's).
 * @internal
 */
export type Ownership = {
  top: (name: string) => boolean;
  folders: Record<string, (name: string) => boolean>;
};

/** What is at a path that a folder is about to be written to. @internal */
export type TargetState = 'missing' | 'empty' | 'not-a-folder' | 'folder';

/** Looks at `target` without changing anything. @internal */
export async function inspectTarget(target: string): Promise<TargetState> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'missing';
    throw error;
  }
  if (!info.isDirectory()) return 'not-a-folder';
  return (await readdir(target)).length === 0 ? 'empty' : 'folder';
}

/** Paths (relative to the folder) of the entries of `dir` that are not the writer's. */
async function foreignEntries(dir: string, owned: Ownership): Promise<string[]> {
  const foreign: string[] = [];
  for (const name of await readdir(dir)) {
    const nested = owned.folders[name];
    if (nested) {
      const info = await stat(join(dir, name));
      if (!info.isDirectory()) {
        foreign.push(name);
        continue;
      }
      for (const inner of await readdir(join(dir, name))) {
        if (!nested(inner)) foreign.push(join(name, inner));
      }
    } else if (!owned.top(name)) {
      foreign.push(name);
    }
  }
  return foreign;
}

/** Moves `entries` from `from` to `to`, recording each one moved in `moved`. */
async function moveEntries(
  entries: readonly string[],
  from: string,
  to: string,
  moved: string[],
): Promise<void> {
  for (const entry of entries) {
    const parts = entry.split(/[\\/]/);
    if (parts.length > 1) await mkdir(join(to, ...parts.slice(0, -1)), { recursive: true });
    await rename(join(from, entry), join(to, entry));
    moved.push(entry);
  }
}

/** Deletes the writer's own entries of `dir`, then `dir` if that leaves it empty. */
async function removeOwned(dir: string, owned: Ownership): Promise<void> {
  for (const name of await readdir(dir)) {
    const nested = owned.folders[name];
    if (nested) {
      for (const inner of await readdir(join(dir, name))) {
        if (nested(inner)) await unlink(join(dir, name, inner)).catch(() => undefined);
      }
      await rmdir(join(dir, name)).catch(() => undefined);
    } else if (owned.top(name)) {
      await unlink(join(dir, name)).catch(() => undefined);
    }
  }
  // rmdir, not rm -r: anything that is not the writer's (a file created meanwhile) stays.
  await rmdir(dir).catch(() => undefined);
}

/**
 * Swaps the fully written folder `temporary` in as `target`, atomically: readers see the old
 * folder or the new one. When `target` exists, its entries that are not the writer's (`owned`)
 * are moved into the new folder first, so they survive; the old folder (now only the writer's
 * files) is moved aside and its own files deleted. Never deletes an entry it does not own. On
 * failure `target` is restored and `temporary` removed (unless a moved entry could not be moved
 * back, in which case it is left in `temporary` rather than lost).
 * @internal
 */
export async function swapInFolder(options: {
  target: string;
  temporary: string;
  aside: string;
  parent: string;
  owned: Ownership;
}): Promise<void> {
  const { target, temporary, aside, parent, owned } = options;
  const existed = (await inspectTarget(target)) !== 'missing';
  const moved: string[] = [];
  let asideDone = false;
  try {
    if (existed) {
      await moveEntries(await foreignEntries(target, owned), target, temporary, moved);
      await rename(target, aside);
      asideDone = true;
    }
    await rename(temporary, target);
  } catch (error) {
    if (asideDone) await rename(aside, target).catch(() => undefined);
    const back: string[] = [];
    await moveEntries([...moved].reverse(), temporary, target, back).catch(() => undefined);
    if (back.length === moved.length) await rm(temporary, { recursive: true, force: true });
    throw error;
  }
  await syncDirectory(parent);
  if (existed) await removeOwned(aside, owned);
}
