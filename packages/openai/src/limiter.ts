/** At most `limit` tasks run at once; the others wait in order. */
export class Limiter {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  /** Runs `task` once a slot is free (never when `signal` aborted while waiting). */
  async run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (this.active >= this.limit) {
      await new Promise<void>((resolve, reject) => {
        const start = () => {
          signal?.removeEventListener('abort', cancel);
          resolve();
        };
        const cancel = () => {
          const index = this.waiting.indexOf(start);
          if (index >= 0) this.waiting.splice(index, 1);
          reject(signal?.reason);
        };
        signal?.addEventListener('abort', cancel, { once: true });
        this.waiting.push(start);
      });
    }
    if (signal?.aborted) {
      // hand the slot on: this task will not use it
      if (this.active < this.limit) this.waiting.shift()?.();
      throw signal.reason;
    }
    this.active += 1;
    try {
      return await task();
    } finally {
      this.active -= 1;
      this.waiting.shift()?.();
    }
  }
}
