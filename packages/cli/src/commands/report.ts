import { existsSync, statSync } from 'node:fs';
import { ErrorCode } from '@rlvr/core';
import { writeRunReport } from '@rlvr/report';
import { ConfigError } from '../errors/config-error.js';
import type { Command } from './command.js';

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
    const out = context.flags.out as string | undefined;
    const result = await writeRunReport(runDir, {
      ...(out === undefined ? {} : { out }),
      ...(context.overwrite ? { overwrite: true } : {}),
    });
    context.io.stdout(`report: wrote ${result.path} (${Math.round(result.bytes / 1024)} KiB)\n`);
    return 0;
  },
};
