/** Batches in flight at once, and the most items one statement carries. */
const MAX_IN_FLIGHT = 4;
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
 * (a unique violation, say) fails only its own caller, with its own error.
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
      if (batch.length === 1) {
        batch[0].reject(error);
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
