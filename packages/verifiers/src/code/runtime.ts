import { execFile } from 'node:child_process';
import { closeSync, existsSync, openSync, readSync, realpathSync } from 'node:fs';
import { dirname } from 'node:path';
import { PYTHON_HARNESS } from './harness-python.js';
import { canDropUid, findOnPath, reachableByOthers } from './host-tools.js';
import type { CodeLanguage } from './types.js';

/** What the sandbox must mount read-only for one interpreter, and which paths it may read. */
export type RuntimeInfo = {
  language: CodeLanguage;
  /** Real path of the interpreter binary (mounted at the same path, invoked by it). */
  executable: string;
  /** `[source, destination]` read-only binds: the binary, its library directories, the loader. */
  binds: [string, string][];
  /** Paths the in-sandbox guard treats as the language runtime (readable). */
  readRoots: string[];
  /**
   * Python only: the harness compiled by this interpreter and serialized with `marshal`, sent ahead
   * of the payload so a run skips compiling ~300 lines of harness (~3 ms CPU). Absent when it could
   * not be built; runs then pass the source with `-c`.
   */
  compiledHarness?: Buffer;
};

function run(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { env: {}, timeout: 20_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout) => (error ? reject(error) : resolve(stdout)),
    );
  });
}

const COMPILE_PYTHON =
  "import sys, marshal; sys.stdout.buffer.write(marshal.dumps(compile(sys.stdin.buffer.read(), '<rlvr-harness>', 'exec')))";

/** Compiles `source` with `interpreter` (trusted, on the host) into `marshal` bytes, or undefined. */
function compilePython(interpreter: string, source: string): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const child = execFile(
      interpreter,
      ['-I', '-S', '-B', '-c', COMPILE_PYTHON],
      { env: {}, timeout: 20_000, maxBuffer: 16 * 1024 * 1024, encoding: 'buffer' },
      (error, stdout) => resolve(error || stdout.length === 0 ? undefined : stdout),
    );
    child.stdin?.on('error', () => {});
    child.stdin?.end(source);
  });
}

/** Reads PT_INTERP (the dynamic loader path) from an ELF64 little-endian binary, or null. */
export function readElfInterpreter(file: string): string | null {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const header = Buffer.alloc(64);
    readSync(fd, header, 0, 64, 0);
    if (header.readUInt32BE(0) !== 0x7f454c46 || header[4] !== 2 || header[5] !== 1) return null;
    const phoff = Number(header.readBigUInt64LE(32));
    const phentsize = header.readUInt16LE(54);
    const phnum = header.readUInt16LE(56);
    const table = Buffer.alloc(phentsize * phnum);
    readSync(fd, table, 0, table.length, phoff);
    for (let index = 0; index < phnum; index++) {
      const base = index * phentsize;
      if (table.readUInt32LE(base) !== 3) continue; // PT_INTERP
      const offset = Number(table.readBigUInt64LE(base + 8));
      const size = Number(table.readBigUInt64LE(base + 32));
      const text = Buffer.alloc(size);
      readSync(fd, text, 0, size, offset);
      return text.toString('utf8').replace(/\0.*$/s, '');
    }
    return null;
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Files mapped by a process (from /proc/<pid>/maps text), real paths only. */
function mappedFiles(maps: string): string[] {
  const files = new Set<string>();
  for (const line of maps.split('\n')) {
    const match = /\s(\/\S.*)$/.exec(line);
    const file = match?.[1];
    if (
      !file ||
      file.endsWith(' (deleted)') ||
      file.startsWith('/dev/') ||
      file.startsWith('/memfd:')
    ) {
      continue;
    }
    if (existsSync(file)) files.add(file);
  }
  return [...files];
}

/**
 * Default Python: the first `python3` on `PATH`. When runs drop to a throw-away uid (the host is
 * root), one that uid cannot reach (e.g. a pyenv shim under `/root`) is skipped.
 */
export function defaultPythonPath(): string | null {
  return findOnPath('python3', canDropUid() ? reachableByOthers : undefined);
}

const DISCOVER_PYTHON =
  "import sys, json; print(json.dumps({'exe': sys.executable, 'path': sys.path, 'maps': open('/proc/self/maps').read()}))";
const DISCOVER_NODE =
  "console.log(JSON.stringify({exe: process.execPath, path: [], maps: require('fs').readFileSync('/proc/self/maps', 'utf8')}))";

const cache = new Map<string, Promise<RuntimeInfo>>();

/**
 * Finds what an interpreter needs at run time by starting it once on the host (it is trusted; the
 * program is not): its real binary, the directories of the shared libraries it maps, its ELF loader
 * and (Python) its `sys.path` directories under `-I -S`. Cached per interpreter.
 */
export function discoverRuntime(language: CodeLanguage, interpreter: string): Promise<RuntimeInfo> {
  const key = `${language}:${interpreter}`;
  let found = cache.get(key);
  if (!found) {
    found = discover(language, interpreter);
    cache.set(key, found);
    found.catch(() => cache.delete(key));
  }
  return found;
}

async function discover(language: CodeLanguage, interpreter: string): Promise<RuntimeInfo> {
  const output =
    language === 'python'
      ? await run(interpreter, ['-I', '-S', '-c', DISCOVER_PYTHON])
      : await run(interpreter, ['-e', DISCOVER_NODE]);
  const info = JSON.parse(output) as { exe: string; path: string[]; maps: string };
  const executable = realpathSync(info.exe || interpreter);
  const binds = new Map<string, string>();
  const readRoots = new Set<string>();
  binds.set(executable, executable);
  for (const file of mappedFiles(info.maps)) {
    if (file === executable) continue;
    const directory = dirname(realpathSync(file));
    binds.set(directory, directory);
    readRoots.add(directory);
  }
  const loader = readElfInterpreter(executable);
  if (loader && existsSync(loader)) {
    const real = realpathSync(loader);
    if (real !== loader) binds.set(real, loader);
  }
  for (const entry of info.path) {
    if (!entry || !existsSync(entry)) continue;
    const real = realpathSync(entry);
    binds.set(real, real);
    readRoots.add(real);
  }
  // Collapse binds nested inside another bind (e.g. lib-dynload inside the stdlib directory).
  const sources = [...binds.keys()];
  const kept: [string, string][] = [];
  for (const [source, destination] of binds) {
    const nested = sources.some(
      (other) => other !== source && binds.get(other) === other && source.startsWith(`${other}/`),
    );
    if (!nested || source !== destination) kept.push([source, destination]);
  }
  kept.sort((a, b) => a[1].length - b[1].length);
  const compiledHarness =
    language === 'python' ? await compilePython(executable, PYTHON_HARNESS) : undefined;
  return {
    language,
    executable,
    binds: kept,
    readRoots: [...readRoots],
    ...(compiledHarness ? { compiledHarness } : {}),
  };
}
