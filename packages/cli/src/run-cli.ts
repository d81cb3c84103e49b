import { RlvrError } from '@rlvr/core';
import type { Command, Io } from './commands/command.js';
import { distillCommand } from './commands/distill.js';
import { evalCommand } from './commands/eval.js';
import { exportCommand } from './commands/export.js';
import { generateCommand } from './commands/generate.js';
import { grpoCommand } from './commands/grpo.js';
import { initCommand } from './commands/init.js';
import { runCommand } from './commands/parse-command.js';
import { reportCommand } from './commands/report.js';
import { sftCommand } from './commands/sft.js';
import { voteCommand } from './commands/vote.js';
import { voteSampleCommand } from './commands/vote-sample.js';
import { ConfigError } from './errors/config-error.js';
import { VERSION } from './version.js';

/** Every `rlvr` subcommand, in `--help` order. */
export const COMMANDS: readonly Command[] = [
  initCommand,
  sftCommand,
  grpoCommand,
  distillCommand,
  generateCommand,
  evalCommand,
  voteCommand,
  reportCommand,
  exportCommand,
];

function mainHelp(): string {
  return [
    `rlvr ${VERSION}: reinforcement learning from verifiable rewards, from the command line`,
    '',
    'usage: rlvr <command> [options]     (rlvr <command> --help for its options and an example)',
    '',
    'commands:',
    ...COMMANDS.map((command) => `  ${command.name.padEnd(10)} ${command.summary}`),
    '',
    'quick start:',
    '  rlvr init my-project && cd my-project',
    '  rlvr sft --config sft.yaml && rlvr grpo --config grpo.yaml',
    '  rlvr eval --config eval.yaml && rlvr report runs/grpo',
    '',
  ].join('\n');
}

/** Exit codes: 0 success, 1 a run failed (data, model, training), 2 bad usage or config, 130 stopped by Ctrl-C. */
export const EXIT = { ok: 0, failed: 1, usage: 2, interrupted: 130 } as const;

function isUsageError(error: unknown): boolean {
  if (ConfigError.isInstance(error)) return true;
  return (
    RlvrError.isInstance(error) &&
    ['UNKNOWN_OPTION', 'INEFFECTIVE_OPTION', 'WOULD_OVERWRITE', 'RESUME_MISMATCH'].includes(
      error.code,
    )
  );
}

/**
 * Runs `rlvr` with `argv` (without the node and script paths) and returns the exit code. Errors
 * are printed as one line `rlvr <command>: <message>` (with the cause's message when it adds one).
 */
export async function runCli(argv: readonly string[], io: Io): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.stdout(mainHelp());
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  if (name === '--version' || name === '-v') {
    io.stdout(`${VERSION}\n`);
    return EXIT.ok;
  }
  const listed = COMMANDS.find((candidate) => candidate.name === name);
  // `rlvr vote --sample` samples the answers first: a config-driven variant of `rlvr vote`
  const command = listed === voteCommand && rest.includes('--sample') ? voteSampleCommand : listed;
  if (command === undefined) {
    const near = COMMANDS.map((c) => c.name).find((c) => c.startsWith(name.slice(0, 2)));
    io.stderr(
      `rlvr: unknown command '${name}'${near ? ` (did you mean '${near}'?)` : ''}; commands: ${COMMANDS.map((c) => c.name).join(', ')}\n`,
    );
    return EXIT.usage;
  }
  try {
    return await runCommand(command, rest, io);
  } catch (error) {
    if (RlvrError.isInstance(error) && error.code === 'ABORTED') {
      io.stderr(`rlvr ${command.name}: stopped; continue with the same command and --resume\n`);
      return EXIT.interrupted;
    }
    const message = error instanceof Error ? error.message : String(error);
    const cause =
      error instanceof Error &&
      error.cause instanceof Error &&
      !message.includes(error.cause.message)
        ? `\n  cause: ${error.cause.message}`
        : '';
    io.stderr(`rlvr ${command.name}: ${message}${cause}\n`);
    if (process.env.RLVR_DEBUG && error instanceof Error) io.stderr(`${error.stack}\n`);
    return isUsageError(error) ? EXIT.usage : EXIT.failed;
  }
}
