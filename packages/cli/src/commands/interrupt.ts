/**
 * An abort signal raised by the first Ctrl-C (SIGINT) while a run is in progress, so trainers
 * stop at a safe point (nothing half-written; `--resume` continues). A second Ctrl-C exits at once.
 */
export function onInterrupt(): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const handler = () => {
    if (controller.signal.aborted) process.exit(130);
    process.stderr.write('\nrlvr: stopping at the next safe point (Ctrl-C again to quit now)\n');
    controller.abort();
  };
  process.on('SIGINT', handler);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off('SIGINT', handler);
    },
  };
}
