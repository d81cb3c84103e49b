import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, normalize, relative } from 'node:path';
import { InvalidArgumentError, type ToolDefinition, validateOptions } from '@rlvr/core';
import { runInWorkspace, type SandboxLimits } from '@rlvr/verifiers';
import { ToolFault } from './tool-fault.js';

const FN = 'createSandboxWorkspace';

/** Options of {@link createSandboxWorkspace}. */
export type SandboxWorkspaceOptions = {
  /** Files to create first: relative path → contents. */
  files?: Readonly<Record<string, string>>;
  /** Paths (of `files`) mounted read-only in every run: readable, never writable. */
  readOnly?: readonly string[];
  /** Limits of each `python` call (default: 5 s wall, 256 MiB, 64 KiB output). */
  limits?: SandboxLimits;
  /** Folder the workspace is created in (default: the OS temp folder). */
  parent?: string;
  /** Name of the tool (default `python`). */
  toolName?: string;
};

/** Input of the sandbox tool. */
export type PythonToolInput = { code: string };

/** One trajectory's persistent sandbox folder and the tool that runs Python in it. */
export type SandboxWorkspace = {
  /** The host folder (mounted at `/sandbox` in each run). */
  readonly dir: string;
  /** Runs `code` with `python3` in the workspace; stdout, stderr and the exit code come back. */
  readonly tool: ToolDefinition<PythonToolInput>;
  /** Reads a workspace file (null when it does not exist). */
  read(path: string): string | null;
  /** Every file in the workspace, relative paths, sorted. */
  files(): string[];
  /** Deletes the folder (it was created by this workspace). */
  close(): void;
};

const DEFAULT_LIMITS: SandboxLimits = {
  wallTimeMs: 5000,
  memoryBytes: 256 * 1024 * 1024,
  outputBytes: 64 * 1024,
};

function checkPath(path: string, parameter: string): string {
  const clean = normalize(path);
  if (clean === '' || clean === '.' || isAbsolute(clean) || clean.startsWith('..')) {
    throw new InvalidArgumentError({
      parameter,
      functionName: FN,
      value: path,
      expected: 'a relative path inside the workspace',
    });
  }
  return clean;
}

function walk(root: string, dir: string, out: string[]): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) walk(root, path, out);
    else out.push(relative(root, path));
  }
}

/**
 * Creates one persistent sandbox workspace (a fresh host folder with `files`) and a `python` tool
 * that runs each call in `@rlvr/verifiers`' bubblewrap sandbox (`runInWorkspace`: no network, no
 * other host files, limits per call) with the folder mounted read-write and `readOnly` paths
 * mounted read-only. Create one per trajectory (in an environment factory) and `close()` it in
 * the environment's `close`. A run that hits its time or output limit is a {@link ToolFault}
 * (`timeout` / `output-limit`); a non-zero exit is a normal result (the model reads the traceback).
 *
 * @example
 * ```ts
 * const workspace = createSandboxWorkspace({ files: { 'tests/test_a.py': 'assert 1 + 1 == 2\n' }, readOnly: ['tests'] });
 * await workspace.tool.execute({ code: "print(open('tests/test_a.py').read())" }, context);
 * workspace.close();
 * ```
 */
export function createSandboxWorkspace(options: SandboxWorkspaceOptions = {}): SandboxWorkspace {
  const input = validateOptions<SandboxWorkspaceOptions>(options, {
    parameter: 'options',
    functionName: FN,
    known: ['files', 'readOnly', 'limits', 'parent', 'toolName'],
  });
  const files = Object.entries(input.files ?? {}).map(([path, text]) => {
    if (typeof text !== 'string') {
      throw new InvalidArgumentError({
        parameter: `options.files['${path}']`,
        functionName: FN,
        value: text,
        expected: 'file contents (a string)',
      });
    }
    return [checkPath(path, `options.files['${path}']`), text] as const;
  });
  const readOnly = (input.readOnly ?? []).map((path, index) =>
    checkPath(path, `options.readOnly[${index}]`),
  );
  const dir = mkdtempSync(join(input.parent ?? tmpdir(), 'rlvr-workspace-'));
  for (const [path, text] of files) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  readOnly.forEach((path, index) => {
    if (!existsSync(join(dir, path))) {
      rmSync(dir, { recursive: true, force: true });
      throw new InvalidArgumentError({
        parameter: `options.readOnly[${index}]`,
        functionName: FN,
        value: path,
        expected: 'a path of options.files (or a folder holding some)',
      });
    }
  });
  const limits = { ...DEFAULT_LIMITS, ...input.limits };
  const tool: ToolDefinition<PythonToolInput> = {
    name: input.toolName ?? 'python',
    description:
      'Runs Python 3 code in the workspace folder (files persist between calls) and returns the exit code, stdout and stderr.',
    inputSchema: {
      type: 'object',
      properties: { code: { type: 'string', maxLength: 20000 } },
      required: ['code'],
      additionalProperties: false,
    },
    // the sandbox enforces its own wall-clock limit; the environment's is a backstop above it
    timeoutMs: (limits.wallTimeMs ?? 5000) + 2000,
    maxOutputBytes: 2 * (limits.outputBytes ?? 65536) + 256,
    async execute({ code }, context) {
      const result = await runInWorkspace({
        code,
        workspace: dir,
        readOnly,
        limits,
        signal: context.signal,
      });
      if (result.status === 'timeout' || result.status === 'output-limit') {
        throw new ToolFault(
          result.status,
          `the Python run hit its ${result.status === 'timeout' ? 'time' : 'output'} limit`,
        );
      }
      return `exit code ${result.exitCode}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
    },
  };
  return {
    dir,
    tool,
    read(path) {
      try {
        return readFileSync(join(dir, checkPath(path, 'path')), 'utf8');
      } catch {
        return null;
      }
    },
    files() {
      const out: string[] = [];
      walk(dir, dir, out);
      return out.sort();
    },
    close() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
