import { existsSync, statSync } from 'node:fs';
import { ErrorCode } from '@rlvr/core';
import * as report from '@rlvr/report';
import { ConfigError } from '../errors/config-error.js';
import type { Command } from './command.js';

type WriteRunReport = (runDir: string, options?: Record<string, unknown>) => Promise<unknown>;

export const reportCommand: Command = {
  name: 'report',
  summary: 'write the self-contained HTML run page of a run folder (@rlvr/report)',
  usage: 'RUN_DIR [--out FILE] [--overwrite]',
  positionals: { names: 'RUN_DIR', min: 1, max: 1 },
  flags: {
    out: { type: 'string', help: 'FILE  where to write the page (default RUN_DIR/report.html)' },
  },
  details: `RUN_DIR is any GrpoTrainer or distillation run folder (rlvr grpo, sft, distill): charts of
every logged metric, the completions table with rewards, and the config.`,
  example: 'rlvr report runs/grpo && open runs/grpo/report.html',
  async run(context) {
    const runDir = context.positionals[0]!;
    if (!existsSync(runDir) || !statSync(runDir).isDirectory()) {
      throw new ConfigError({
        key: 'RUN_DIR',
        message: `'${runDir}' is not a folder`,
        code: ErrorCode.INVALID_ARGUMENT,
      });
    }
    const write = (report as unknown as { writeRunReport?: WriteRunReport }).writeRunReport;
    if (typeof write !== 'function') {
      throw new ConfigError({
        key: 'report',
        message: 'this @rlvr/report has no writeRunReport',
        code: ErrorCode.UNAVAILABLE,
      });
    }
    const out = context.flags.out as string | undefined;
    const result = await write(runDir, {
      ...(out === undefined ? {} : { out }),
      ...(context.overwrite ? { overwrite: true } : {}),
    });
    const path =
      typeof result === 'string' ? result : (result as { path?: string } | undefined)?.path;
    context.io.stdout(`report: wrote ${path ?? 'the run page'}\n`);
    return 0;
  },
};
