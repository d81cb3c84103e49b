import { runCli } from '../run-cli.js';

/** Runs `rlvr …argv` in-process and returns its exit code and what it printed (tests only). */
export async function cli(
  ...argv: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
  });
  return { code, stdout, stderr };
}
