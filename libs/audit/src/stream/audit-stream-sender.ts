import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Clock } from '@app/common';
import { AppConfig, AuditStreamConfig } from '@app/config';
import { LOGGER, Logger, Metrics } from '@app/observability';
import { DatabaseUnavailableError } from '@app/persistence';
import { AuditDestinationRepository, DestinationSecretRow } from './audit-destination.repository';
import { AuditOutboxRepository, ClaimedDelivery, DeliveryOutcome } from './audit-outbox.repository';
import { streamedEvent } from './audit-stream-format';
import { AuditStreamTransport, DeliveryResult, failureText } from './audit-stream-transport';

/** Rows one purge statement deletes at most. */
const PURGE_BATCH = 5000;
/** Delivered rows are kept this long for the delivery view, then purged. */
const DELIVERED_RETENTION_MS = 7 * 86_400_000;
/** How long a stopping instance lets deliveries on the wire finish before it aborts them. */
const SHUTDOWN_GRACE_MS = 5000;

/**
 * Exponential backoff with equal jitter, as push delivery (DECISIONS 10.3): `baseMs` doubling per
 * attempt up to `maxMs`, half fixed, half random.
 */
export function streamRetryDelayMs(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(attempt - 1, 30));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/**
 * The audit stream's outbox sender on each instance (DECISIONS 11.4). Every AUDIT_STREAM_POLL_INTERVAL_MS
 * it claims due rows (FOR UPDATE SKIP LOCKED: each row by one instance, leased for AUDIT_STREAM_LEASE_S),
 * delivers them grouped by destination, and writes the outcomes in one statement: delivered; or
 * retried after backoff; or dead-lettered after AUDIT_STREAM_MAX_ATTEMPTS attempts or when its event
 * is older than AUDIT_STREAM_MAX_AGE_S. A sender killed mid-delivery leaves its rows to be taken
 * again after the lease: the receiver may see an event twice, under the same id (at least once).
 * At shutdown it claims nothing more and lets the deliveries on the wire finish.
 */
@Injectable()
export class AuditStreamSender implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly settings: AuditStreamConfig;
  private timer?: NodeJS.Timeout;
  private purgeTimer?: NodeJS.Timeout;
  private stopping = false;
  private pumping?: Promise<void>;
  private wokenWhilePumping = false;
  private claimsFailing = false;
  private readonly shutdown = new AbortController();
  private readonly purgeIntervalS: number;

  constructor(
    private readonly outbox: AuditOutboxRepository,
    private readonly destinations: AuditDestinationRepository,
    private readonly transport: AuditStreamTransport,
    private readonly metrics: Metrics,
    private readonly clock: Clock,
    config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.settings = config.auditStream;
    this.purgeIntervalS = config.purgeIntervalS;
  }

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => this.wake(), this.settings.pollIntervalMs);
    this.timer.unref();
    this.purgeTimer = setInterval(() => void this.purge(), this.purgeIntervalS * 1000);
    this.purgeTimer.unref();
    this.wake();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    clearInterval(this.timer);
    clearInterval(this.purgeTimer);
    const grace = setTimeout(() => this.shutdown.abort(), SHUTDOWN_GRACE_MS);
    await this.pumping;
    clearTimeout(grace);
    this.transport.close();
  }

  /** Looks for due rows now. */
  wake(): void {
    if (this.stopping) return;
    if (this.pumping) {
      this.wokenWhilePumping = true;
      return;
    }
    this.pumping = this.pump().finally(() => (this.pumping = undefined));
  }

  /** Resolves when this instance has nothing in hand (tests). */
  async idle(): Promise<void> {
    while (this.pumping) await this.pumping;
  }

  private async pump(): Promise<void> {
    try {
      do {
        this.wokenWhilePumping = false;
        while (!this.stopping) {
          const now = this.clock.now();
          const rows = await this.outbox.claim(now, new Date(now.getTime() + this.settings.leaseS * 1000), this.settings.batchSize);
          if (this.claimsFailing) {
            this.claimsFailing = false;
            this.logger.info('claiming audit stream deliveries works again');
          }
          if (rows.length === 0) break;
          await this.deliverBatch(rows);
        }
      } while (this.wokenWhilePumping && !this.stopping);
    } catch (error) {
      // Claimed rows come back after their lease. A database outage is logged by libs/persistence.
      if (!this.claimsFailing && !(error instanceof DatabaseUnavailableError))
        this.logger.error({ err: error }, 'delivering audit stream events failed; retrying at every poll until it works');
      this.claimsFailing = true;
    }
  }

  private async deliverBatch(rows: ClaimedDelivery[]): Promise<void> {
    const byDestination = new Map<string, ClaimedDelivery[]>();
    for (const row of rows) byDestination.set(row.destination_id, [...(byDestination.get(row.destination_id) ?? []), row]);
    const destinations = new Map((await this.destinations.findManyWithSecrets([...byDestination.keys()])).map((d) => [d.id, d]));
    const outcomes: DeliveryOutcome[] = [];
    await Promise.all(
      [...byDestination].map(async ([id, claimed]) => {
        const destination = destinations.get(id);
        // Deleted meanwhile: its rows went with it (ON DELETE CASCADE); nothing to write.
        if (!destination) return;
        const results = await this.transport.deliver(destination, claimed.map(streamedEvent), this.shutdown.signal);
        const now = this.clock.now();
        claimed.forEach((row, index) => outcomes.push(this.outcome(destination, row, results[index], now)));
      }),
    );
    await this.outbox.settleMany(outcomes);
  }

  private outcome(destination: DestinationSecretRow, row: ClaimedDelivery, result: DeliveryResult, now: Date): DeliveryOutcome {
    const labels = { org: destination.org_id ?? '', destination: destination.id };
    const base = { destinationId: row.destination_id, eventId: row.event_id, attempt: row.attempts, now };
    if (result.delivered) {
      this.metrics.auditStreamDelivered.inc(labels);
      this.metrics.auditStreamLag.observe(labels, Math.max(0, now.getTime() - row.occurred_at.getTime()) / 1000);
      return { ...base, state: 'delivered', error: null };
    }
    this.metrics.auditStreamFailed.inc({ ...labels, reason: result.failure });
    const error = failureText(result.failure);
    const tooOld = now.getTime() - row.occurred_at.getTime() >= this.settings.maxAgeS * 1000;
    if (row.attempts >= this.settings.maxAttempts || tooOld) {
      this.metrics.auditStreamDeadLettered.inc(labels);
      const why = tooOld ? `older than AUDIT_STREAM_MAX_AGE_S (${this.settings.maxAgeS} s)` : `${row.attempts} attempts`;
      return { ...base, state: 'deadLettered', error: `dead-lettered after ${why}; last: ${error}` };
    }
    const delay = streamRetryDelayMs(row.attempts, this.settings.retryBaseMs, this.settings.retryMaxMs);
    return { ...base, state: 'pending', dueAt: new Date(now.getTime() + delay), error };
  }

  private async purge(): Promise<void> {
    const before = new Date(this.clock.now().getTime() - DELIVERED_RETENTION_MS);
    try {
      while ((await this.outbox.purgeDelivered(before, PURGE_BATCH)) === PURGE_BATCH && !this.stopping);
    } catch (error) {
      if (!(error instanceof DatabaseUnavailableError)) this.logger.error({ err: error }, 'deleting delivered audit stream rows failed; will retry');
    }
  }
}
