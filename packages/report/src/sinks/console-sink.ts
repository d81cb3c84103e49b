import {
  ErrorCode,
  InvalidArgumentError,
  type MetricRecord,
  RlvrError,
  validateInteger,
  validateOptions,
} from '@rlvr/core';
import type { MetricsSink } from './metrics-sink.js';
import { validateRecord } from './validate-record.js';

/** Options of {@link createConsoleSink}. */
export type ConsoleSinkOptions = {
  /**
   * The metrics to show, in this order (those a record lacks are left out). Default: the first of
   * {@link DEFAULT_CONSOLE_METRICS} the record has, then its other metrics up to `maxMetrics`.
   */
  metrics?: readonly string[];
  /** At most this many metrics per line when `metrics` is not given. Default 6. */
  maxMetrics?: number;
  /** Print every this many steps (and always step 1). Default 1. */
  every?: number;
  /** Significant digits. Default 4. */
  digits?: number;
  /** Where lines go. Default: `process.stderr` (stdout stays free for program output). */
  print?: (line: string) => void;
};

/** The metrics the console line shows first when present (TRL/verl names as GrpoTrainer logs them). */
export const DEFAULT_CONSOLE_METRICS: readonly string[] = [
  'loss',
  'reward/mean',
  'reward/std',
  'kl',
  'entropy',
  'completions/mean_length',
  'frac_reward_zero_std',
  'grad_norm',
  'learning_rate',
];

const FN = 'createConsoleSink';
const KNOWN = ['metrics', 'maxMetrics', 'every', 'digits', 'print'] as const;

function formatValue(value: number, digits: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (value !== 0 && (Math.abs(value) >= 10 ** digits || Math.abs(value) < 1e-3)) {
    return value.toExponential(Math.max(0, digits - 2));
  }
  return String(Number(value.toPrecision(digits)));
}

function formatElapsed(ms: number): string {
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds.toFixed(1)}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${String(Math.floor(seconds % 60)).padStart(2, '0')}s`;
  return `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, '0')}m`;
}

/**
 * The one-line summary {@link createConsoleSink} prints for a record, e.g.
 * `[train] step 12 (4.2s) loss=0.0131 reward/mean=0.5625 kl=0.00214`.
 */
export function formatMetricLine(
  record: MetricRecord,
  options: { metrics?: readonly string[]; maxMetrics?: number; digits?: number } = {},
): string {
  const { maxMetrics = 6, digits = 4 } = options;
  const names =
    options.metrics?.filter((name) => name in record.metrics) ??
    [
      ...DEFAULT_CONSOLE_METRICS.filter((name) => name in record.metrics),
      ...Object.keys(record.metrics).filter((name) => !DEFAULT_CONSOLE_METRICS.includes(name)),
    ].slice(0, maxMetrics);
  const head = `${record.phase === undefined ? '' : `[${record.phase}] `}step ${record.step}`;
  const time = record.elapsedMs === undefined ? '' : ` (${formatElapsed(record.elapsedMs)})`;
  const values = names.map((name) => ` ${name}=${formatValue(record.metrics[name]!, digits)}`);
  return `${head}${time}${values.join('')}`;
}

/**
 * A sink printing one compact line per record (see {@link formatMetricLine}) to stderr, or to
 * `print`. Nothing is buffered; `flush` and `close` do nothing but mark it closed.
 *
 * @example
 * ```ts
 * const sink = createConsoleSink({ metrics: ['loss', 'reward/mean'], every: 10 });
 * ```
 * @throws {InvalidArgumentError} `UNKNOWN_OPTION` / `INVALID_ARGUMENT` for bad options.
 */
export function createConsoleSink(options: ConsoleSinkOptions = {}): MetricsSink {
  const checked = validateOptions<ConsoleSinkOptions>(options, {
    parameter: 'options',
    functionName: FN,
    known: KNOWN,
  });
  const { metrics } = checked;
  if (
    metrics !== undefined &&
    !(Array.isArray(metrics) && metrics.every((name) => typeof name === 'string'))
  ) {
    throw new InvalidArgumentError({
      parameter: 'options.metrics',
      functionName: FN,
      value: metrics,
      expected: 'an array of metric names',
    });
  }
  const context = (name: string) => ({ parameter: `options.${name}`, functionName: FN, min: 1 });
  const maxMetrics =
    checked.maxMetrics === undefined
      ? 6
      : validateInteger(checked.maxMetrics, context('maxMetrics'));
  const every = checked.every === undefined ? 1 : validateInteger(checked.every, context('every'));
  const digits =
    checked.digits === undefined
      ? 4
      : validateInteger(checked.digits, { ...context('digits'), max: 17 });
  if (checked.print !== undefined && typeof checked.print !== 'function') {
    throw new InvalidArgumentError({
      parameter: 'options.print',
      functionName: FN,
      value: checked.print,
      expected: 'a function taking one line of text',
    });
  }
  const print = checked.print ?? ((line: string) => process.stderr.write(`${line}\n`));
  let closed = false;
  return {
    name: 'console',
    async write(record: MetricRecord) {
      if (closed) throw new RlvrError(ErrorCode.UNAVAILABLE, `${FN}: the sink is closed`);
      validateRecord(record, `${FN}().write`);
      if (record.step % every !== 0 && record.step !== 1) return;
      print(
        formatMetricLine(record, {
          ...(metrics === undefined ? {} : { metrics }),
          maxMetrics,
          digits,
        }),
      );
    },
    async flush() {},
    async close() {
      closed = true;
    },
  };
}
