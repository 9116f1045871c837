import { DatabaseUnavailableError } from './database-unavailable';

/**
 * Batches in flight at once, and the most items one statement carries. One: what comes while a
 * statement runs goes in the next one. With four in flight, token requests at 1,000-1,800/s went
 * 1.5 to a statement and PostgreSQL spent 390-460 µs per token; with one, 184-188 µs, and the
 * service 10-25% less (issue 35, docs/performance.md). A caller waits at most for the statement
 * ahead of its own.
 */
const MAX_IN_FLIGHT = 1;
const MAX_BATCH = 256;

interface Pending<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

/**
 * Writes a batch in one statement and one commit. Answers one result per item, in the items' order
 * (an insert's "was it new?", say), or nothing when the callers need no answer beyond success.
 */
export type BatchWriter<T, R> = (items: T[]) => Promise<[R] extends [void] ? void : R[]>;

/**
 * Group commit for a hot write path: a caller gets its answer only after its row is committed, but
 * concurrent callers need not each pay a statement and a commit. While MAX_IN_FLIGHT batches are
 * being written, new items queue and go together in the next statement; alone, an item is written at
 * once (no added latency when idle). A batch that fails is retried item by item, so one bad item
 * (a unique violation, say) fails only its own caller, with its own error; a batch that fails
 * because the database is unreachable fails all its callers at once.
 */
export class GroupCommit<T, R = void> {
  private queue: Pending<T, R>[] = [];
  private inFlight = 0;

  constructor(private readonly writeBatch: BatchWriter<T, R>) {}

  write(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.flush();
    });
  }

  private flush(): void {
    while (this.inFlight < MAX_IN_FLIGHT && this.queue.length > 0) {
      const batch = this.queue.splice(0, MAX_BATCH);
      this.inFlight++;
      void this.writeAll(batch).finally(() => {
        this.inFlight--;
        this.flush();
      });
    }
  }

  private async writeAll(batch: Pending<T, R>[]): Promise<void> {
    try {
      const results = await this.writeStatement(batch.map((p) => p.item));
      batch.forEach((pending, index) => pending.resolve(results[index] as R));
    } catch (error) {
      // Unreachable for one item is unreachable for all: each caller gets the 503 now, not one after another.
      if (batch.length === 1 || error instanceof DatabaseUnavailableError) {
        batch.forEach((pending) => pending.reject(error));
        return;
      }
      for (const pending of batch) {
        await this.writeStatement([pending.item]).then((results) => pending.resolve(results[0] as R), pending.reject);
      }
    }
  }

  /** One statement; a writer that answers results must answer exactly one per item. */
  private async writeStatement(items: T[]): Promise<readonly unknown[]> {
    const results = (await this.writeBatch(items)) as unknown[] | undefined;
    if (results === undefined) return [];
    if (results.length !== items.length) {
      throw new Error(`GroupCommit: the batch writer answered ${results.length} results for ${items.length} items`);
    }
    return results;
  }
}
