/**
 * Runs at most `limit` tasks at once and lets at most `queue` more wait for a turn; a task beyond
 * that is refused at once with `busy()` rather than queued without bound, so that a flood of
 * expensive work (password hashes) answers fast instead of starving everything else. A caller that
 * is no flood (an authenticated administrator) may pass a larger `maxWaiting` and wait its turn.
 */
export class ConcurrencyLimit {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly limit: number,
    private readonly queue: number,
    private readonly busy: () => Error,
  ) {}

  async run<T>(task: () => Promise<T>, maxWaiting = this.queue): Promise<T> {
    if (this.running < this.limit) this.running++;
    else if (this.waiting.length < maxWaiting) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else throw this.busy();
    try {
      return await task();
    } finally {
      // The turn passes straight to the next waiting task, so `running` counts it already.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
