import cliProgress from 'cli-progress';

/** A progress bar with ETA on stderr, or nothing (not a TTY, `--quiet`, or CI). */
export type Progress = {
  update(value: number, status?: string): void;
  stop(): void;
};

/** Whether bars are drawn: stderr is a TTY, `CI` is unset and `--quiet` was not given. */
export function progressEnabled(quiet: boolean): boolean {
  return !quiet && Boolean(process.stderr.isTTY) && !process.env.CI;
}

/** Starts a bar `label [████──] value/total ETA …` on stderr when enabled; a no-op otherwise. */
export function startProgress(label: string, total: number, enabled: boolean, start = 0): Progress {
  if (!enabled) return { update() {}, stop() {} };
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: `${label} [{bar}] {value}/{total} | ETA {eta_formatted} | {status}`,
      hideCursor: true,
      etaBuffer: 20,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, start, { status: '' });
  return {
    update(value, status) {
      bar.update(value, { status: status ?? '' });
    },
    stop() {
      bar.stop();
    },
  };
}
