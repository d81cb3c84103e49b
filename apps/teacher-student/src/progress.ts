import cliProgress from 'cli-progress';

/** A progress display for one phase: a cli-progress bar on a TTY, sparse log lines otherwise. */
export type PhaseProgress = {
  update(value: number, status?: string): void;
  stop(): void;
};

/** Where progress goes; `silent` prints nothing (tests). */
export type ProgressMode = 'auto' | 'bar' | 'lines' | 'silent';

export function phaseProgress(label: string, total: number, mode: ProgressMode): PhaseProgress {
  const resolved =
    mode === 'auto' ? (process.stderr.isTTY && !process.env.CI ? 'bar' : 'lines') : mode;
  if (resolved === 'silent') return { update() {}, stop() {} };
  if (resolved === 'bar') {
    const bar = new cliProgress.SingleBar(
      {
        format: `${label.padEnd(22)} |{bar}| {value}/{total} | {status} | {duration_formatted}`,
        stream: process.stderr,
        hideCursor: true,
        clearOnComplete: false,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(total, 0, { status: '' });
    return {
      update: (value, status) => bar.update(value, { status: status ?? '' }),
      stop: () => bar.stop(),
    };
  }
  const started = performance.now();
  let nextReport = 0;
  return {
    update(value, status) {
      const fraction = total > 0 ? value / total : 1;
      if (fraction + 1e-9 < nextReport && value < total) return;
      nextReport = Math.floor(fraction * 4 + 1) / 4;
      const seconds = ((performance.now() - started) / 1000).toFixed(0);
      process.stderr.write(`${label}: ${value}/${total} ${status ?? ''} (${seconds} s)\n`);
    },
    stop() {},
  };
}
