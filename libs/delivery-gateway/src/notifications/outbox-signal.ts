import { Injectable } from '@nestjs/common';

/**
 * Tells this instance's sender that notifications were committed, so they go out at once rather than
 * at its next poll (other instances find them by polling, PUSH_POLL_INTERVAL_MS).
 */
@Injectable()
export class OutboxSignal {
  private readonly listeners = new Set<() => void>();

  listen(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  committed(): void {
    for (const listener of this.listeners) listener();
  }
}
