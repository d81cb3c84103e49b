import type { ConfigSpec, ResolvedConfig } from '../config/load-config.js';

/** Where a command writes: text to stdout (results) and stderr (progress, messages). */
export type Io = {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
};

/** A flag of a subcommand (node:util parseArgs style). */
export type FlagSpec = {
  type: 'string' | 'boolean';
  short?: string;
  multiple?: boolean;
  /** One line for `--help`, e.g. `FILE  write the completions here`. */
  help: string;
};

/** What a subcommand receives after its flags and config were parsed and validated. */
export type CommandContext = {
  io: Io;
  positionals: string[];
  flags: Record<string, string | boolean | string[] | undefined>;
  /** The resolved config (config-driven subcommands only). */
  config: ResolvedConfig;
  /** `--quiet`: no progress bars, no console summary. */
  quiet: boolean;
  /** Whether progress bars are drawn (stderr is a TTY, not CI, not quiet). */
  progress: boolean;
  /** `--overwrite`: replace outputs of an earlier run. */
  overwrite: boolean;
};

/** One `rlvr` subcommand. */
export type Command = {
  name: string;
  /** One line for `rlvr --help`. */
  summary: string;
  /** Usage line(s) after `rlvr <name>`. */
  usage: string;
  /** More help text (keys, notes). */
  details?: string;
  /** A complete example (shell). */
  example: string;
  /** Config keys and defaults; absent for subcommands without a config. */
  spec?: ConfigSpec;
  /**
   * The config as the run uses it, with the packages' own defaults filled in (what
   * `--print-config` shows and the run folder records); default: the resolved config's values.
   * Throws a package's validation error for a value the run would reject.
   */
  effectiveConfig?: (config: ResolvedConfig) => Record<string, unknown>;
  /** Subcommand-specific flags besides the common ones. */
  flags?: Readonly<Record<string, FlagSpec>>;
  /** Positional arguments: names for help, how many are needed. */
  positionals?: { names: string; min: number; max: number };
  /** Common flags this subcommand takes besides --help/--quiet (default: all config flags). */
  trains?: boolean;
  run(context: CommandContext): Promise<number>;
};
