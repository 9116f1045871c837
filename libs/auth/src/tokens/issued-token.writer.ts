import { Injectable } from '@nestjs/common';
import { IssuedTokenRecord, TokenRepository } from './token.repository';

/** Batches in flight at once, and the most tokens one statement carries. */
const MAX_IN_FLIGHT = 4;
const MAX_BATCH = 256;

interface Pending {
  record: IssuedTokenRecord;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit for issued tokens. A token is returned only after its row is committed (the bearer
 * check of any instance must find it), but concurrent requests need not each pay a statement and a
 * commit: while MAX_IN_FLIGHT batches are being written, newly issued tokens queue and go together
 * in the next statement. Alone, a token is written at once (no added latency when idle). A batch
 * that fails is retried row by row, so one bad row cannot fail its neighbours.
 */
@Injectable()
export class IssuedTokenWriter {
  private queue: Pending[] = [];
  private inFlight = 0;

  constructor(private readonly tokens: TokenRepository) {}

  record(record: IssuedTokenRecord): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ record, resolve, reject });
      this.flush();
    });
  }

  private flush(): void {
    while (this.inFlight < MAX_IN_FLIGHT && this.queue.length > 0) {
      const batch = this.queue.splice(0, MAX_BATCH);
      this.inFlight++;
      void this.write(batch).finally(() => {
        this.inFlight--;
        this.flush();
      });
    }
  }

  private async write(batch: Pending[]): Promise<void> {
    try {
      await this.tokens.recordIssued(batch.map((p) => p.record));
      for (const pending of batch) pending.resolve();
    } catch (error) {
      if (batch.length === 1) {
        batch[0].reject(error);
        return;
      }
      for (const pending of batch) {
        await this.tokens.recordIssued([pending.record]).then(pending.resolve, pending.reject);
      }
    }
  }
}
