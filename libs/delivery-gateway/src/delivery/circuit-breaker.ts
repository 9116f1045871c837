/**
 * One gateway's circuit (DECISIONS 10.4), per instance: closed while the hub answers; open for a
 * cool-down after `threshold` consecutive failures (429, 5xx, timeouts, network errors), during
 * which its notifications are put back without an attempt; then half-open: one send probes, and
 * its result closes the circuit or opens it for another cool-down.
 */
export class CircuitBreaker {
  private failures = 0;
  private openUntil = 0;
  private probing = false;

  constructor(
    private readonly threshold: number,
    private readonly cooldownMs: number,
  ) {}

  /** Whether a send may go now; in the half-open state only the one probe may. */
  allows(nowMs: number): boolean {
    if (this.failures < this.threshold) return true;
    if (nowMs < this.openUntil || this.probing) return false;
    this.probing = true;
    return true;
  }

  /** Open and still cooling down: nothing may go. */
  cooling(nowMs: number): boolean {
    return this.failures >= this.threshold && nowMs < this.openUntil;
  }

  /** When the gateway's notifications should be tried again while the circuit is open. */
  reopensAt(nowMs: number): number {
    return Math.max(this.openUntil, nowMs);
  }

  get state(): 'closed' | 'open' | 'halfOpen' {
    if (this.failures < this.threshold) return 'closed';
    return this.probing ? 'halfOpen' : 'open';
  }

  succeeded(): void {
    this.failures = 0;
    this.probing = false;
  }

  failed(nowMs: number): void {
    this.failures++;
    if (this.failures >= this.threshold) {
      this.openUntil = nowMs + this.cooldownMs;
      this.probing = false;
    }
  }
}
