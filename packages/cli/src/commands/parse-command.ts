import { parseArgs } from 'node:util';
import { ErrorCode } from '@rlvr/core';
import { attributeError, formatConfig, resolveConfig } from '../config/load-config.js';
import { ConfigError } from '../errors/config-error.js';
import { progressEnabled } from '../logging/progress.js';
import type { Command, CommandContext, FlagSpec, Io } from './command.js';

const CONFIG_FLAGS: Readonly<Record<string, FlagSpec>> = {
  config: { type: 'string', short: 'c', help: 'FILE  the YAML or JSON config' },
  set: {
    type: 'string',
    multiple: true,
    help: 'KEY=VALUE  override a config key (dotted path, typed: 0.1, true, [a, b])',
  },
  'print-config': {
    type: 'boolean',
    help: '     print the resolved config (with defaults) and exit',
  },
};
const TRAIN_FLAGS: Readonly<Record<string, FlagSpec>> = {
  'report-to': {
    type: 'string',
    help: 'LIST  metrics sinks: jsonl,csv,tensorboard,console (sets reportTo)',
  },
  resume: { type: 'boolean', help: '     continue from the newest checkpoint in outputDir' },
};
const COMMON_FLAGS: Readonly<Record<string, FlagSpec>> = {
  overwrite: {
    type: 'boolean',
    help: '     replace outputs of an earlier run (never done without it)',
  },
  quiet: { type: 'boolean', short: 'q', help: '     no progress bars or console summary' },
  help: { type: 'boolean', short: 'h', help: '     show this help' },
};

/** Every flag a subcommand takes. */
export function flagsOf(command: Command): Record<string, FlagSpec> {
  return {
    ...(command.spec ? CONFIG_FLAGS : {}),
    ...(command.trains ? TRAIN_FLAGS : {}),
    ...(command.flags ?? {}),
    ...COMMON_FLAGS,
  };
}

/** The `--help` text of a subcommand. */
export function helpOf(command: Command): string {
  const flags = Object.entries(flagsOf(command)).map(([name, flag]) => {
    const [arg, ...rest] = flag.help.split('  ');
    const left = `${flag.short ? `-${flag.short}, ` : '    '}--${name}${arg?.trim() ? ` ${arg.trim()}` : ''}`;
    return `  ${left.padEnd(34)} ${rest.join('  ').trim()}`;
  });
  return [
    `rlvr ${command.name}: ${command.summary}`,
    '',
    `usage: rlvr ${command.name} ${command.usage}`,
    '',
    'options:',
    ...flags,
    ...(command.details ? ['', command.details.trimEnd()] : []),
    '',
    'example:',
    ...command.example
      .trim()
      .split('\n')
      .map((line) => `  ${line}`),
    '',
  ].join('\n');
}

function usageError(command: Command, message: string): ConfigError {
  return new ConfigError({
    key: 'arguments',
    message: `${message} (see rlvr ${command.name} --help)`,
    code: ErrorCode.INVALID_ARGUMENT,
  });
}

/**
 * Parses a subcommand's argv (flags, positionals, config with `--set` overrides) and runs it.
 * `--help` and `--print-config` print and return 0 without running.
 */
export async function runCommand(
  command: Command,
  argv: readonly string[],
  io: Io,
): Promise<number> {
  const flags = flagsOf(command);
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: Object.fromEntries(
        Object.entries(flags).map(([name, flag]) => [
          name,
          {
            type: flag.type,
            ...(flag.short ? { short: flag.short } : {}),
            ...(flag.multiple ? { multiple: true } : {}),
          },
        ]),
      ),
    });
  } catch (error) {
    throw usageError(command, (error as Error).message);
  }
  const values = parsed.values as CommandContext['flags'];
  if (values.help) {
    io.stdout(helpOf(command));
    return 0;
  }
  const positionals = parsed.positionals;
  const range = command.positionals ?? { names: '', min: 0, max: 0 };
  if (positionals.length < range.min || positionals.length > range.max) {
    throw usageError(
      command,
      range.max === 0
        ? `unexpected argument '${positionals[0]}'`
        : `expected ${range.names}, got ${positionals.length === 0 ? 'nothing' : positionals.join(' ')}`,
    );
  }
  const sets = [...((values.set as string[] | undefined) ?? [])];
  if (typeof values['report-to'] === 'string') {
    sets.push(`reportTo=[${values['report-to']}]`);
  }
  if (values.resume === true) sets.push('resume=true');
  const config = command.spec
    ? await resolveConfig(command.spec, {
        file: values.config as string | undefined,
        sets,
      }).catch((error: unknown) => {
        // Required keys are not required for --print-config.
        if (
          values['print-config'] &&
          ConfigError.isInstance(error) &&
          /required/.test(error.message)
        ) {
          return resolveConfig(
            { ...command.spec!, required: [] },
            { file: values.config as string | undefined, sets },
          );
        }
        throw error;
      })
    : { values: {}, file: undefined, origins: new Map<string, string>() };
  if (values['print-config']) {
    let shown = config.values;
    try {
      shown = command.effectiveConfig?.(config) ?? config.values;
    } catch (error) {
      throw attributeError(error, config);
    }
    io.stdout(formatConfig(shown));
    return 0;
  }
  const quiet = values.quiet === true;
  const context: CommandContext = {
    io,
    positionals,
    flags: values,
    config,
    quiet,
    progress: progressEnabled(quiet),
    overwrite: values.overwrite === true,
  };
  // A package's validation error names `config.beta` / `options.epochs`: say where it was set.
  return command.run(context).catch((error: unknown) => {
    throw command.spec ? attributeError(error, config) : error;
  });
}
