/** Whom a task runs for, and how many tasks may wait before it is refused. */
export interface TurnOptions {
  /**
   * Tasks of one party (a source address) share its turns: when tasks wait, the next turn goes to the
   * waiting party with the fewest tasks running, and a full queue makes room for a party with fewer
   * places. Tasks without one are all of one party.
   */
  party?: string;
  /** At most this many tasks may wait (the queue size unless given): a caller that is no flood passes Infinity. */
  maxWaiting?: number;
}

interface Waiter {
  start: () => void;
  refuse: (error: Error) => void;
  /** Came in under the queue bound, so may give its place up to a party with fewer (an unbounded caller waits its turn). */
  bounded: boolean;
}

/**
 * Runs at most `limit` tasks at once and lets at most `queue` more wait for a turn; a task beyond
 * that is refused at once with `busy()` rather than queued without bound, so that a flood of
 * expensive work (password hashes) answers fast instead of starving everything else. A caller that
 * is no flood (an authenticated administrator) may pass a larger `maxWaiting` and wait its turn.
 *
 * Turns are shared fairly between parties (DECISIONS 4): a free turn goes to the waiting party with
 * the fewest tasks running (among equals, the one served longest ago), and when the queue is full,
 * a party holding at least two places fewer than the party holding most takes that party's newest
 * place, which is refused with `busy()`. So a flood from one or two addresses gets the turns nobody
 * else wants, while a task of another address waits for about one turn per other waiting party
 * instead of behind the whole flood.
 */
export class ConcurrencyLimit {
  private running = 0;
  private readonly runningBy = new Map<string, number>();
  /** The waiting tasks of each party (never an empty list); the Map's order is the order of service among equals. */
  private readonly waiting = new Map<string, Waiter[]>();
  private waitingCount = 0;

  constructor(
    private readonly limit: number,
    private readonly queue: number,
    private readonly busy: () => Error,
  ) {}

  /** Tasks waiting for a turn now. */
  get waitingTasks(): number {
    return this.waitingCount;
  }

  async run<T>(task: () => Promise<T>, { party = '', maxWaiting = this.queue }: TurnOptions = {}): Promise<T> {
    if (this.running < this.limit) {
      this.running++;
      this.countRunning(party, 1);
    } else {
      // The turn is counted in `running` and `runningBy` when `handOn` hands it on.
      await this.wait(party, maxWaiting);
    }
    try {
      return await task();
    } finally {
      this.countRunning(party, -1);
      this.handOn();
    }
  }

  private countRunning(party: string, change: 1 | -1): void {
    const count = (this.runningBy.get(party) ?? 0) + change;
    if (count === 0) this.runningBy.delete(party);
    else this.runningBy.set(party, count);
  }

  private wait(party: string, maxWaiting: number): Promise<void> {
    const bounded = maxWaiting <= this.queue;
    if (this.waitingCount >= maxWaiting) {
      const place = bounded ? this.placeFor(party) : undefined;
      if (!place) throw this.busy();
      place.refuse(this.busy());
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        start: resolve,
        refuse: (error) => {
          this.remove(party, waiter);
          reject(error);
        },
        bounded,
      };
      const list = this.waiting.get(party);
      if (list) list.push(waiter);
      else this.waiting.set(party, [waiter]);
      this.waitingCount++;
    });
  }

  /** The newest bounded waiter of the party holding most places, when it holds at least two more than `party`. */
  private placeFor(party: string): Waiter | undefined {
    const mine = this.waiting.get(party)?.filter((w) => w.bounded).length ?? 0;
    let most: Waiter[] = [];
    for (const [other, list] of this.waiting) {
      const places = list.filter((w) => w.bounded);
      if (other !== party && places.length > most.length) most = places;
    }
    return most.length >= mine + 2 ? most[most.length - 1] : undefined;
  }

  private remove(party: string, waiter: Waiter): void {
    const list = this.waiting.get(party);
    const index = list?.indexOf(waiter) ?? -1;
    if (!list || index < 0) return;
    list.splice(index, 1);
    if (list.length === 0) this.waiting.delete(party);
    this.waitingCount--;
  }

  /** A finished task's turn passes straight to the next waiting task (so `running` counts it still), or is given back. */
  private handOn(): void {
    let chosen: string | undefined;
    let fewest = Infinity;
    for (const party of this.waiting.keys()) {
      const running = this.runningBy.get(party) ?? 0;
      if (running < fewest) [chosen, fewest] = [party, running];
    }
    if (chosen === undefined) {
      this.running--;
      return;
    }
    const list = this.waiting.get(chosen)!;
    const next = list.shift()!;
    // Served: the party goes to the back of the order among equals.
    this.waiting.delete(chosen);
    if (list.length > 0) this.waiting.set(chosen, list);
    this.waitingCount--;
    this.countRunning(chosen, 1);
    next.start();
  }
}
