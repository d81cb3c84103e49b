import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';

/**
 * A per-run cgroup (pids + memory) — an extra layer used only when the host process may create
 * cgroups (root, as in CI). Supports cgroup v2 (unified) and v1 (separate `pids` and `memory`
 * hierarchies). Every step is best-effort: when anything fails, the run relies on rlimits and
 * namespaces alone, and `IsolationReport.cgroup` says so.
 */
export type RunCgroup = {
  /** `cgroup.procs` files the wrapper shell writes its own pid into before exec'ing the sandbox. */
  procsFiles: string[];
  /** Number of OOM kills in this cgroup so far. */
  oomKills(): number;
  /** Kills every process left and removes the cgroup (retrying while it drains). */
  dispose(): void;
};

type Layout = { version: 1 | 2; pids?: string; memory?: string; unified?: string };

let layout: Layout | null | undefined;
let counter = 0;

function ownPath(controller: string): string | null {
  try {
    for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
      const [, controllers, path] = line.split(':');
      if (controllers === undefined || path === undefined) continue;
      if (controllers.split(',').includes(controller)) return path;
    }
  } catch {}
  return null;
}

/** Removes groups left by earlier processes that died before their cleanup ran. */
function removeStale(parent: string): void {
  try {
    const stale = readdirSync(parent).filter((name) => {
      const match = /^rlvr-sandbox-(\d+)-\d+$/.exec(name);
      if (!match) return false;
      try {
        process.kill(Number(match[1]), 0);
        return false; // its owner is alive
      } catch {
        return true;
      }
    });
    tryRemove(stale.map((name) => join(parent, name)));
  } catch {}
}

function detectLayout(): Layout | null {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return null;
  if (existsSync('/sys/fs/cgroup/cgroup.controllers')) {
    const own = ownPath('') ?? '/';
    return { version: 2, unified: join('/sys/fs/cgroup', own) };
  }
  const pidsPath = ownPath('pids');
  const memoryPath = ownPath('memory');
  const result: Layout = { version: 1 };
  if (pidsPath !== null && existsSync('/sys/fs/cgroup/pids')) {
    result.pids = join('/sys/fs/cgroup/pids', pidsPath);
  }
  if (memoryPath !== null && existsSync('/sys/fs/cgroup/memory')) {
    result.memory = join('/sys/fs/cgroup/memory', memoryPath);
  }
  return result.pids || result.memory ? result : null;
}

function detectLayoutAndClean(): Layout | null {
  const found = detectLayout();
  for (const parent of [found?.unified, found?.pids, found?.memory])
    if (parent) removeStale(parent);
  return found;
}

function tryRemove(directories: string[], attempt = 0): void {
  const left = directories.filter((directory) => {
    try {
      for (const pid of readFileSync(join(directory, 'cgroup.procs'), 'utf8').split('\n')) {
        if (pid) {
          try {
            process.kill(Number(pid), 'SIGKILL');
          } catch {}
        }
      }
      rmdirSync(directory);
      return false;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code !== 'ENOENT';
    }
  });
  if (left.length > 0 && attempt < 20) {
    // Not unref'd: the kernel tears the PID namespace down asynchronously; ~2 s at most.
    setTimeout(() => tryRemove(left, attempt + 1), 10 * (attempt + 1));
  }
}

function readOomKills(file: string, key: string): number {
  try {
    const match = new RegExp(`^${key} (\\d+)$`, 'm').exec(readFileSync(file, 'utf8'));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

/** Creates the cgroup(s) of one run, or returns null when cgroups are not usable here. */
export function createRunCgroup(limits: {
  processes: number;
  memoryBytes: number;
}): RunCgroup | null {
  if (layout === undefined) layout = detectLayoutAndClean();
  if (layout === null) return null;
  const name = `rlvr-sandbox-${process.pid}-${++counter}`;
  const created: string[] = [];
  try {
    if (layout.version === 2 && layout.unified) {
      const directory = join(layout.unified, name);
      mkdirSync(directory);
      created.push(directory);
      if (!existsSync(join(directory, 'pids.max')) || !existsSync(join(directory, 'memory.max'))) {
        throw new Error('pids/memory controllers not enabled for child cgroups');
      }
      writeFileSync(join(directory, 'pids.max'), String(limits.processes));
      writeFileSync(join(directory, 'memory.max'), String(limits.memoryBytes));
      if (existsSync(join(directory, 'memory.swap.max'))) {
        writeFileSync(join(directory, 'memory.swap.max'), '0');
      }
      return {
        procsFiles: [join(directory, 'cgroup.procs')],
        oomKills: () => readOomKills(join(directory, 'memory.events'), 'oom_kill'),
        dispose: () => {
          try {
            writeFileSync(join(directory, 'cgroup.kill'), '1');
          } catch {}
          tryRemove([directory]);
        },
      };
    }
    const procsFiles: string[] = [];
    let memoryDirectory: string | undefined;
    if (layout.pids) {
      const directory = join(layout.pids, name);
      mkdirSync(directory);
      created.push(directory);
      writeFileSync(join(directory, 'pids.max'), String(limits.processes));
      procsFiles.push(join(directory, 'cgroup.procs'));
    }
    if (layout.memory) {
      const directory = join(layout.memory, name);
      mkdirSync(directory);
      created.push(directory);
      writeFileSync(join(directory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
      try {
        writeFileSync(join(directory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
      } catch {}
      procsFiles.push(join(directory, 'cgroup.procs'));
      memoryDirectory = directory;
    }
    return {
      procsFiles,
      oomKills: () =>
        memoryDirectory ? readOomKills(join(memoryDirectory, 'memory.oom_control'), 'oom_kill') : 0,
      dispose: () => tryRemove(created),
    };
  } catch {
    tryRemove(created);
    layout = null; // do not retry on every run
    return null;
  }
}
