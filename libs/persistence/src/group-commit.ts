/** Batches in flight at once, and the most items one statement carries. */
const MAX_IN_FLIGHT = 4;
const MAX_BATCH = 256;

interface Pending<T> {
  item: T;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit for a hot write path: a caller gets its answer only after its row is committed, but
 * concurrent callers need not each pay a statement and a commit. While MAX_IN_FLIGHT batches are
 * being written, new items queue and go together in the next statement; alone, an item is written at
 * once (no added latency when idle). A batch that fails is retried item by item, so one bad item
 * (a unique violation, say) fails only its own caller, with its own error.
 */
export class GroupCommit<T> {
  private queue: Pending<T>[] = [];
  private inFlight = 0;

  constructor(private readonly writeBatch: (items: T[]) => Promise<void>) {}

  write(item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
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

  private async writeAll(batch: Pending<T>[]): Promise<void> {
    try {
      await this.writeBatch(batch.map((p) => p.item));
      for (const pending of batch) pending.resolve();
    } catch (error) {
      if (batch.length === 1) {
        batch[0].reject(error);
        return;
      }
      for (const pending of batch) {
        await this.writeBatch([pending.item]).then(pending.resolve, pending.reject);
      }
    }
  }
}
