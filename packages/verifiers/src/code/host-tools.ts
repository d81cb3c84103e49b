import { accessSync, constants, readFileSync, realpathSync, statSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { ErrorCode, RlvrError } from '@rlvr/core';

/** One host program: its path, or null and why (`missing`, for error messages). */
export type HostTool = { path: string | null; missing: string };

/** The host programs one run needs, resolved once per call. */
export type HostTools = { bwrap: HostTool; prlimit: HostTool };

/**
 * Refuses non-Linux hosts: the sandbox is built from Linux namespaces (bubblewrap), `prlimit` and
 * `/proc`, and even the unisolated mode reads `/proc` to find the interpreter's libraries.
 * @internal
 */
export function assertLinux(functionName: string, platform: string = process.platform): void {
  if (platform === 'linux') return;
  throw new RlvrError(
    ErrorCode.UNAVAILABLE,
    `${functionName}() is Linux only: the code sandbox is built from Linux namespaces (bubblewrap), ` +
      `prlimit and /proc, and this host's platform is '${platform}'. Run it on Linux (a container ` +
      'or VM will do).',
  );
}

export function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/**
 * The uid drop happens in the spawn itself (libuv: `setgroups(0)`, `setgid`, `setuid` between fork
 * and exec: no `setpriv` hop). libuv ignores a failing `setgroups`, which happens only where
 * `/proc/self/setgroups` says `deny`; there the drop is not used (root's groups would survive).
 */
export function canDropUid(): boolean {
  if (!isRoot()) return false;
  try {
    return readFileSync('/proc/self/setgroups', 'utf8').trim() !== 'deny';
  } catch {
    return true; // kernels before 3.19 have no such file and no such restriction
  }
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * True when a user that is neither the owner nor in the group can execute `file`: every folder on
 * its real path is searchable by others and the file is executable by others (the unprivileged
 * throw-away uid of a run must be able to reach the interpreter; `/root/.pyenv/...` is not).
 */
export function reachableByOthers(file: string): boolean {
  let path: string;
  try {
    path = realpathSync(file);
    if ((statSync(path).mode & 0o001) === 0) return false;
  } catch {
    return false;
  }
  for (let folder = dirname(path); ; folder = dirname(folder)) {
    try {
      if ((statSync(folder).mode & 0o001) === 0) return false;
    } catch {
      return false;
    }
    if (folder === dirname(folder)) return true;
  }
}

/**
 * The first `name` on `PATH` that is an executable file (and, with `reachable`, passes that check
 * too), or null.
 */
export function findOnPath(
  name: string,
  reachable: (file: string) => boolean = () => true,
): string | null {
  for (const folder of (process.env.PATH ?? '').split(delimiter)) {
    if (!folder) continue;
    const candidate = join(folder, name);
    if (isExecutable(candidate) && reachable(candidate)) return candidate;
  }
  return null;
}

/**
 * Resolves one tool: the pinned path (option, then environment variable) when given, or the first
 * one on PATH. `missing` says, for error messages, why `path` is null.
 */
function resolveTool(name: string, pin: string | undefined, pinnedBy: string): HostTool {
  if (pin === undefined) {
    const path = findOnPath(name);
    return { path, missing: path ? '' : `there is no \`${name}\` on PATH` };
  }
  return isExecutable(pin)
    ? { path: pin, missing: '' }
    : { path: null, missing: `${pinnedBy} pins it to '${pin}', which is not an executable file` };
}

/**
 * Resolves bubblewrap and prlimit: `bwrapPath`/`prlimitPath` when given, else `RLVR_BWRAP` (for
 * bwrap), else the first one on `PATH`.
 */
export function resolveHostTools(pins: { bwrapPath?: string; prlimitPath?: string }): HostTools {
  const environment = process.env.RLVR_BWRAP ? process.env.RLVR_BWRAP : undefined;
  return {
    bwrap:
      pins.bwrapPath !== undefined
        ? resolveTool('bwrap', pins.bwrapPath, 'options.bwrapPath')
        : resolveTool('bwrap', environment, 'RLVR_BWRAP'),
    prlimit: resolveTool('prlimit', pins.prlimitPath, 'options.prlimitPath'),
  };
}
