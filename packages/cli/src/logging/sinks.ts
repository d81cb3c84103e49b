import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ErrorCode } from '@rlvr/core';
import {
  createConsoleSink,
  createCsvSink,
  createJsonlSink,
  createTensorBoardSink,
  fanOut,
  type MetricsSink,
} from '@rlvr/report';
import { ConfigError } from '../errors/config-error.js';

/** The metrics sinks `reportTo` may name (TRL's `report_to`). */
export const REPORT_TO = ['jsonl', 'csv', 'tensorboard', 'console', 'none'] as const;
export type ReportTo = (typeof REPORT_TO)[number];

/** Where each sink writes inside a run folder. */
export const SINK_FILES = {
  jsonl: 'metrics.jsonl',
  csv: 'metrics.csv',
  tensorboard: 'tensorboard',
} as const;

/** Checks a `reportTo` value (a list, or a comma-separated string) and returns the sink names. */
export function parseReportTo(value: unknown, source: string | undefined): ReportTo[] {
  const list = typeof value === 'string' ? value.split(',').map((item) => item.trim()) : value;
  if (!Array.isArray(list)) {
    throw new ConfigError({
      key: 'reportTo',
      source,
      message: `expected a list of ${REPORT_TO.join(', ')}`,
      code: ErrorCode.INVALID_ARGUMENT,
    });
  }
  for (const item of list) {
    if (!REPORT_TO.includes(item as ReportTo)) {
      throw new ConfigError({
        key: 'reportTo',
        source,
        message: `unknown sink '${String(item)}' (sinks: ${REPORT_TO.join(', ')})`,
        code: ErrorCode.INVALID_ARGUMENT,
      });
    }
  }
  return [...new Set(list as ReportTo[])].filter((item) => item !== 'none');
}

/**
 * Opens the sinks of a run folder: `metrics.jsonl` (unless the trainer writes it itself),
 * `metrics.csv`, `tensorboard/events.out.tfevents.*` and a console line per step. Files of an
 * earlier run are refused unless `overwrite` (or appended to when `resume`, JSONL only; a
 * resumed run's CSV goes to `metrics.resumed-<n>.csv`).
 */
export async function openSinks(options: {
  reportTo: readonly ReportTo[];
  dir: string;
  /** GrpoTrainer writes `metrics.jsonl` itself. */
  skipJsonl?: boolean;
  overwrite: boolean;
  resume: boolean;
  quiet: boolean;
  print: (line: string) => void;
}): Promise<MetricsSink> {
  const sinks: MetricsSink[] = [];
  const ifExists = options.overwrite ? 'overwrite' : 'refuse';
  for (const kind of options.reportTo) {
    if (kind === 'jsonl' && !options.skipJsonl) {
      sinks.push(
        await createJsonlSink({
          path: join(options.dir, SINK_FILES.jsonl),
          ifExists: options.resume ? 'append' : ifExists,
        }),
      );
    } else if (kind === 'csv') {
      let path = join(options.dir, SINK_FILES.csv);
      if (options.resume) {
        for (let n = 1; existsSync(path); n++) path = join(options.dir, `metrics.resumed-${n}.csv`);
      }
      sinks.push(await createCsvSink({ path, ifExists: options.resume ? 'refuse' : ifExists }));
    } else if (kind === 'tensorboard') {
      sinks.push(
        await createTensorBoardSink({ logDir: join(options.dir, SINK_FILES.tensorboard) }),
      );
    } else if (kind === 'console' && !options.quiet) {
      sinks.push(createConsoleSink({ print: options.print }));
    }
  }
  return fanOut(sinks);
}

/**
 * Feeds records to a sink one at a time, in order, from synchronous callbacks (GrpoTrainer's
 * `onStep`, distillStudent's `onStep`): `push` never throws; `done` waits for every write and
 * rethrows the first failure.
 */
export function sequentialWriter(sink: MetricsSink): {
  push(record: Parameters<MetricsSink['write']>[0]): void;
  done(): Promise<void>;
} {
  let chain: Promise<void> = Promise.resolve();
  let failure: { error: unknown } | undefined;
  return {
    push(record) {
      chain = chain.then(async () => {
        if (failure) return;
        try {
          await sink.write(record);
        } catch (error) {
          failure = { error };
        }
      });
    },
    async done() {
      await chain;
      if (failure) throw failure.error;
    },
  };
}
