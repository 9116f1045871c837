import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { AuditLog } from '@app/audit';
import { Clock, DataCipher, OutboundFailure, OutboundFailureKind, OutboundHttp } from '@app/common';
import { DatabaseUnavailableError, GroupCommit } from '@app/persistence';
import { AppConfig, PushDeliveryConfig } from '@app/config';
import { LOGGER, Logger, Metrics, traced } from '@app/observability';
import { connectionStringParts } from '../gateways/connection-string';
import { PushGatewayRepository, PushGatewaySecretRow } from '../gateways/push-gateway.repository';
import { hubPolicy, sealContext } from '../gateways/push-gateway.service';
import { OutboxSignal } from '../notifications/outbox-signal';
import { AttemptOutcome, ClaimedNotification, PushOutboxRepository } from '../notifications/push-outbox.repository';
import { CircuitBreaker } from './circuit-breaker';
import { SIGNATURE_LIFETIME_S, hubMessage, hubUrls, sharedAccessSignature } from './hub-request';
import { retryAfterMs, retryDelayMs, verdictOf } from './retry-policy';

/** A gateway ready to send through, for one claim: its connection string opened only to sign. */
interface ReadyGateway {
  row: PushGatewaySecretRow;
  sendUrl: string;
  /** The Authorization value, signed when called (the key stays inside the closure). */
  authorization: () => string;
}

/** Why no send can be made for a gateway (a configuration problem, retried with backoff). */
interface UnusableGateway {
  row: PushGatewaySecretRow;
  problem: string;
}

interface Job {
  row: ClaimedNotification;
  gateway: ReadyGateway;
}

/** Rows one purge statement deletes at most, so that a backlog never holds locks for long. */
const PURGE_BATCH = 5000;

/** How long a stopping instance lets sends already on the wire finish before it aborts them. */
const SHUTDOWN_GRACE_MS = 2000;

/**
 * The outbox sender of each instance (DECISIONS 10.1). Claims due rows in short statements (FOR
 * UPDATE SKIP LOCKED: each row is claimed by one instance), picks each authenticator's gateway from
 * the organization's authenticator policies, and posts to the hub; sends run concurrently, at most
 * PUSH_CONCURRENCY per instance and PUSH_GATEWAY_CONCURRENCY per gateway, each with a timeout, so a
 * slow or broken hub holds only its own share. Each outcome is written back under the attempt it
 * belongs to: sent, retried later (429, 5xx, timeouts, network errors, with backoff and Retry-After),
 * failed (other 4xx; 410 also marks the authenticator stale), dead-lettered after PUSH_MAX_ATTEMPTS,
 * or discarded (nothing left to send to). A gateway's circuit opens after consecutive failures; its
 * rows are put back without spending an attempt until the cool-down ends.
 */
@Injectable()
export class PushSender implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly settings: PushDeliveryConfig;
  private timer?: NodeJS.Timeout;
  private purgeTimer?: NodeJS.Timeout;
  private purging?: Promise<number>;
  private readonly purgeIntervalS: number;
  private unlisten?: () => void;
  private stopping = false;
  private pumping?: Promise<void>;
  private wokenWhilePumping = false;
  /** Set while claims fail, so that an outage is logged once rather than at every poll. */
  private claimsFailing = false;
  /** Rows claimed by this instance and not yet settled (sending or waiting for their gateway's turn). */
  private held = 0;
  private readonly active = new Map<string, number>();
  private readonly waiting = new Map<string, Job[]>();
  private readonly sends = new Set<Promise<void>>();
  private readonly breakers = new Map<string, CircuitBreaker>();
  private readonly shutdown = new AbortController();
  /** Every send goes through the outbound rule of DECISIONS 10.2: public addresses only (loopback with PUSH_LOOPBACK_HUBS), no redirect. */
  private readonly http: OutboundHttp;
  /** Outcomes written together: one statement for the sends that finished meanwhile. */
  private readonly outcomes = new GroupCommit<{ id: string; attempt: number; outcome: AttemptOutcome }, boolean>((items) => this.outbox.settleMany(items));

  constructor(
    private readonly outbox: PushOutboxRepository,
    private readonly gateways: PushGatewayRepository,
    private readonly cipher: DataCipher,
    private readonly signal: OutboxSignal,
    private readonly audit: AuditLog,
    private readonly metrics: Metrics,
    private readonly clock: Clock,
    config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.settings = config.push;
    this.http = new OutboundHttp(hubPolicy(config));
    this.purgeIntervalS = config.purgeIntervalS;
  }

  onApplicationBootstrap(): void {
    this.unlisten = this.signal.listen(() => this.wake());
    this.timer = setInterval(() => this.wake(), this.settings.pollIntervalMs);
    this.timer.unref();
    this.purgeTimer = setInterval(() => void this.purgeOnce(), this.purgeIntervalS * 1000);
    this.purgeTimer.unref();
    this.wake();
  }

  /**
   * Deletes notifications settled more than PUSH_RETENTION_DAYS ago, in bounded statements; every
   * PURGE_INTERVAL_S (instances purging together delete each row once). Answers how many.
   */
  purgeOnce(): Promise<number> {
    this.purging ??= this.purge().finally(() => (this.purging = undefined));
    return this.purging;
  }

  private async purge(): Promise<number> {
    const before = new Date(this.clock.now().getTime() - this.settings.retentionDays * 86_400_000);
    let purged = 0;
    try {
      for (;;) {
        const deleted = await this.outbox.purgeSettled(before, PURGE_BATCH);
        purged += deleted;
        if (deleted < PURGE_BATCH || this.stopping) break;
      }
      if (purged > 0) this.logger.info({ purged }, 'deleted settled push notifications past their retention');
    } catch (error) {
      if (!(error instanceof DatabaseUnavailableError)) this.logger.error({ err: error }, 'deleting settled push notifications failed; will retry');
    }
    return purged;
  }

  /**
   * Stops claiming; rows waiting for their gateway's turn are put back at once (another instance
   * takes them); sends on the wire get a short grace, then are aborted (their rows come back after
   * the lease, under the same idempotency key).
   */
  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    clearInterval(this.timer);
    clearInterval(this.purgeTimer);
    await this.purging;
    this.unlisten?.();
    await this.pumping;
    const now = this.clock.now();
    const putBack = [...this.waiting.values()].flat();
    this.waiting.clear();
    await Promise.all(putBack.map((job) => this.outbox.defer(job.row.id, job.row.attempts, now, now).catch(() => undefined)));
    const grace = setTimeout(() => this.shutdown.abort(), SHUTDOWN_GRACE_MS);
    while (this.sends.size > 0) await Promise.allSettled([...this.sends]);
    clearTimeout(grace);
    this.http.close();
  }

  /** Looks for due rows now (a poll, a commit on this instance, a send that finished). */
  wake(): void {
    if (this.stopping) return;
    if (this.pumping) {
      this.wokenWhilePumping = true;
      return;
    }
    this.pumping = this.pump().finally(() => (this.pumping = undefined));
  }

  /** How many rows this instance holds; for tests that wait until it is idle. */
  get inFlight(): number {
    return this.held;
  }

  private async pump(): Promise<void> {
    try {
      do {
        this.wokenWhilePumping = false;
        while (!this.stopping && this.held < this.settings.concurrency) {
          const now = this.clock.now();
          const limit = Math.min(this.settings.batchSize, this.settings.concurrency - this.held);
          const rows = await this.outbox.claim(now, new Date(now.getTime() + this.settings.leaseS * 1000), limit);
          if (this.claimsFailing) {
            this.claimsFailing = false;
            this.logger.info('claiming push notifications works again');
          }
          if (rows.length === 0) break;
          // Should this read fail, the rows come back after their lease: none is held meanwhile.
          const gateways = await this.gatewaysOf(rows);
          this.held += rows.length;
          for (const row of rows) this.route(row, gateways.get(row.org_id) ?? [], now);
        }
      } while (this.wokenWhilePumping && !this.stopping);
    } catch (error) {
      // The rows claimed so far come back after their lease. A database outage is logged once by
      // the database itself (libs/persistence); anything else once here, until claims work again.
      if (!this.claimsFailing && !(error instanceof DatabaseUnavailableError))
        this.logger.error({ err: error }, 'claiming push notifications failed; retrying at every poll until it works');
      this.claimsFailing = true;
    }
  }

  /** The bound gateways of the claimed rows' organizations, in priority order, opened lazily per gateway. */
  private async gatewaysOf(rows: ClaimedNotification[]): Promise<Map<string, (ReadyGateway | UnusableGateway)[]>> {
    const orgIds = [...new Set(rows.map((row) => row.org_id))];
    const byOrg = new Map<string, (ReadyGateway | UnusableGateway)[]>();
    for (const row of await this.gateways.findBoundWithConnectionStrings(orgIds)) {
      if (!row.hub || !row.connectionString) continue;
      const list = byOrg.get(row.org_id) ?? [];
      list.push(this.ready(row));
      byOrg.set(row.org_id, list);
    }
    return byOrg;
  }

  private ready(row: PushGatewaySecretRow): ReadyGateway | UnusableGateway {
    let plain: string;
    try {
      plain = this.cipher.open(row.connectionString!, sealContext(row.org_id, row.id));
    } catch {
      return { row, problem: `the connection string of gateway ${row.id} cannot be opened with DATA_ENCRYPTION_KEYS` };
    }
    const parts = connectionStringParts(plain);
    const urls = hubUrls(parts, row.hub!);
    return {
      row,
      sendUrl: urls.send,
      authorization: () => sharedAccessSignature(urls.resource, parts.keyName, parts.key, Math.floor(Date.now() / 1000) + SIGNATURE_LIFETIME_S),
    };
  }

  private route(row: ClaimedNotification, candidates: (ReadyGateway | UnusableGateway)[], now: Date): void {
    if (row.push_handle === null) return this.finish(row, { state: 'discarded', error: 'the authenticator was removed', now });
    if (row.stale_since !== null) return this.finish(row, { state: 'discarded', error: 'the authenticator is stale (its push handle is gone)', now });
    const gateway = candidates.find((candidate) => candidate.row.supported_operating_systems.includes(row.operating_system!));
    if (!gateway) {
      return this.finish(row, {
        state: 'discarded',
        error: `no gateway with a hub and a connection string, bound by an authenticator policy of the organization, supports ${row.operating_system}`,
        now,
      });
    }
    const ttlS = gateway.row.notification_ttl_s;
    if (ttlS > 0 && row.created_at.getTime() + ttlS * 1000 <= now.getTime()) {
      return this.finish(row, { state: 'discarded', gatewayId: gateway.row.id, error: `expired: not delivered within its time to live (${ttlS} s)`, now });
    }
    if ('problem' in gateway) return this.retryOrDeadLetter(row, gateway.row, { error: gateway.problem }, now);
    const breaker = this.breakerOf(gateway.row.id);
    if (breaker.cooling(now.getTime())) return this.putBack(row, new Date(breaker.reopensAt(now.getTime())), now);
    const queue = this.waiting.get(gateway.row.id) ?? [];
    if (queue.length >= this.settings.gatewayConcurrency) {
      // This gateway already has a full turn waiting: the row goes back for a later claim, so one
      // slow hub never holds more than its share of this instance's rows.
      return this.putBack(row, new Date(now.getTime() + this.settings.pollIntervalMs), now);
    }
    queue.push({ row, gateway });
    this.waiting.set(gateway.row.id, queue);
    this.drain(gateway.row.id);
  }

  /**
   * Starts the gateway's waiting sends while it has a free slot and its circuit lets them: all of
   * them when closed; only the probe when half-open (the rest wait for its answer); none when open
   * (they go back until the cool-down ends, without spending an attempt).
   */
  private drain(gatewayId: string): void {
    const queue = this.waiting.get(gatewayId);
    if (!queue) return;
    const breaker = this.breakerOf(gatewayId);
    const now = this.clock.now();
    while (queue.length > 0 && (this.active.get(gatewayId) ?? 0) < this.settings.gatewayConcurrency) {
      if (breaker.cooling(now.getTime())) {
        for (const job of queue.splice(0)) this.putBack(job.row, new Date(breaker.reopensAt(now.getTime())), now);
        break;
      }
      if (!breaker.allows(now.getTime())) break;
      this.start(queue.shift()!);
    }
    if (queue.length === 0) this.waiting.delete(gatewayId);
  }

  private breakerOf(gatewayId: string): CircuitBreaker {
    let breaker = this.breakers.get(gatewayId);
    if (!breaker) {
      breaker = new CircuitBreaker(this.settings.breakerFailures, this.settings.breakerCooldownMs);
      this.breakers.set(gatewayId, breaker);
    }
    return breaker;
  }

  private start(job: Job): void {
    const id = job.gateway.row.id;
    this.active.set(id, (this.active.get(id) ?? 0) + 1);
    const send = this.send(job)
      .catch((error: unknown) => {
        // A bug, not the hub: the row goes back for another try, without spending an attempt.
        this.logger.error({ err: error, notification: job.row.id }, 'sending a push notification failed unexpectedly');
        const now = this.clock.now();
        this.putBack(job.row, new Date(now.getTime() + this.settings.pollIntervalMs), now);
      })
      .finally(() => {
        this.sends.delete(send);
        this.active.set(id, this.active.get(id)! - 1);
        if (!this.stopping) this.drain(id);
      });
    this.sends.add(send);
  }

  private async send({ row, gateway }: Job): Promise<void> {
    const labels = { org: row.org_id, gateway: gateway.row.id };
    const breaker = this.breakerOf(gateway.row.id);
    const message = hubMessage(
      { type: gateway.row.type, notificationTtlS: gateway.row.notification_ttl_s, messageTemplates: gateway.row.message_templates },
      { id: row.id, template: row.template, values: row.template_values, pushHandle: row.push_handle! },
      this.clock.now(),
    );
    const started = performance.now();
    let status: number | undefined;
    let retryAfter: string | null = null;
    let failure: { reason: string; error: string } | undefined;
    try {
      // The hub's body is not kept (it is not needed, and nothing it echoes may reach a log).
      // With tracing on (DECISIONS 13.2), a span per send naming the notification and gateway (never the hub's URL path, handle or credential).
      const answer = await traced('push.send', { 'push.notification_id': String(row.id), 'push.gateway_id': gateway.row.id, 'app.org': row.org_id }, () =>
        this.http.post(gateway.sendUrl, {
          headers: { ...message.headers, Authorization: gateway.authorization() },
          body: message.body,
          timeoutMs: this.settings.sendTimeoutMs,
          signal: this.shutdown.signal,
        }),
      );
      status = answer.status;
      retryAfter = typeof answer.headers['retry-after'] === 'string' ? answer.headers['retry-after'] : null;
    } catch (error) {
      const kind = error instanceof OutboundFailure ? error.kind : 'connection_failed';
      // The network's own error (it may name internal addresses or certificates) only in this log.
      this.logger.debug({ notification: row.id, gateway: gateway.row.id, kind, err: networkCause(error) }, 'push send got no answer');
      failure = { reason: kind === 'timeout' ? 'timeout' : 'network', error: failureText(kind, this.settings.sendTimeoutMs) };
    }
    this.metrics.pushSendDuration.observe(labels, (performance.now() - started) / 1000);
    const now = this.clock.now();
    const verdict = status === undefined ? 'retry' : verdictOf(status);
    if (verdict === 'retry') {
      breaker.failed(now.getTime());
      failure ??= { reason: status === 429 ? 'throttled' : 'server', error: `the hub answered ${status}` };
      this.metrics.pushFailed.inc({ ...labels, reason: failure.reason });
      this.metrics.pushCircuitOpen.set(labels, breaker.state === 'closed' ? 0 : 1);
      return this.retryOrDeadLetter(row, gateway.row, { error: failure.error, status, retryAfter }, now);
    }
    breaker.succeeded();
    this.metrics.pushCircuitOpen.set(labels, 0);
    if (verdict === 'sent') {
      this.metrics.pushSent.inc(labels);
      return this.finish(row, { state: 'sent', gatewayId: gateway.row.id, status, error: null, now });
    }
    this.metrics.pushFailed.inc({ ...labels, reason: verdict });
    if (verdict === 'gone') return this.gone(row, gateway.row, status!, now);
    // A redirect is never followed (DECISIONS 10.2): it could lead anywhere, the machine itself included.
    const refusal =
      status! >= 300 && status! < 400
        ? `redirect_refused: the hub answered ${status}, a redirect, which is not followed; not retried`
        : `the hub refused it with ${status}; not retried`;
    return this.finish(row, { state: 'failed', gatewayId: gateway.row.id, status, error: refusal, now });
  }

  /** Another attempt after backoff (or the hub's Retry-After), or the dead letter after the last one. */
  private retryOrDeadLetter(
    row: ClaimedNotification,
    gateway: PushGatewaySecretRow,
    failure: { error: string; status?: number; retryAfter?: string | null },
    now: Date,
  ): void {
    const labels = { org: row.org_id, gateway: gateway.id };
    if (row.attempts >= this.settings.maxAttempts) {
      this.metrics.pushDeadLettered.inc(labels);
      const error = `dead-lettered after ${row.attempts} attempts; last: ${failure.error}`;
      return this.finish(row, { state: 'deadLettered', gatewayId: gateway.id, status: failure.status ?? null, error, now }, () =>
        this.audit.record({
          org: row.org_id,
          actor: 'system',
          action: 'pushNotification.deadLetter',
          target: row.id,
          outcome: 'failure',
          details: { gateway: gateway.id, attempts: row.attempts, lastStatus: failure.status ?? null, cause: failure.error },
        }),
      );
    }
    this.metrics.pushRetried.inc(labels);
    const delay = retryAfterMs(failure.retryAfter, now.getTime()) ?? retryDelayMs(row.attempts, this.settings.retryBaseMs, this.settings.retryMaxMs);
    this.finish(row, {
      state: 'pending',
      dueAt: new Date(now.getTime() + delay),
      gatewayId: gateway.id,
      status: failure.status ?? null,
      error: failure.error,
      now,
    });
  }

  private gone(row: ClaimedNotification, gateway: PushGatewaySecretRow, status: number, now: Date): void {
    const outcome: AttemptOutcome = {
      state: 'failed',
      gatewayId: gateway.id,
      status,
      error: 'the hub called the push handle gone; the authenticator is now stale',
      now,
    };
    this.settleWith(row, async () => {
      const marked = await this.outbox.settleGone(row.id, row.attempts, outcome);
      if (marked) {
        await this.audit.record({
          org: row.org_id,
          actor: 'system',
          action: 'authenticator.stale',
          target: row.authenticator_id,
          outcome: 'success',
          details: { userId: row.user_id, gateway: gateway.id, notification: row.id },
        });
      }
    });
  }

  private putBack(row: ClaimedNotification, dueAt: Date, now: Date): void {
    this.settleWith(row, () => this.outbox.defer(row.id, row.attempts, dueAt, now));
  }

  private finish(row: ClaimedNotification, outcome: AttemptOutcome, then?: () => Promise<void>): void {
    this.settleWith(row, async () => {
      if ((await this.outcomes.write({ id: row.id, attempt: row.attempts, outcome })) && then) await then();
    });
  }

  /** Writes a row's outcome and releases it; a failed write leaves the row to come back after its lease. */
  private settleWith(row: ClaimedNotification, write: () => Promise<void>): void {
    const settling = write()
      .catch((error: unknown) => {
        // A database outage is logged once by the database itself (libs/persistence).
        if (!(error instanceof DatabaseUnavailableError)) {
          this.logger.error({ err: error, notification: row.id }, 'writing a push notification outcome failed; it comes back after its lease');
        }
      })
      .finally(() => {
        this.sends.delete(settling);
        this.held--;
        this.wake();
      });
    this.sends.add(settling);
  }
}

/** A network failure's cause in a few words for the service's log (ECONNREFUSED, a certificate error's code), never a URL's credentials. */
export function networkCause(error: unknown): string {
  const outer = error as { name?: unknown; cause?: { code?: unknown; name?: unknown } } | undefined;
  if (typeof outer?.cause?.code === 'string') return outer.cause.code;
  if (typeof outer?.cause?.name === 'string') return outer.cause.name;
  return typeof outer?.name === 'string' ? outer.name : 'unknown';
}

/**
 * What the administrators' view says of a send that got no answer (DECISIONS 10.5): its class and a
 * fixed sentence, never the network's error, which would make the view a scanner of the service's
 * network (which ports answer, which names resolve, whose certificate is there).
 */
export function failureText(kind: OutboundFailureKind, timeoutMs: number): string {
  switch (kind) {
    case 'timeout':
      return `timeout: no answer within ${timeoutMs} ms`;
    case 'address_not_allowed':
      return 'address_not_allowed: the endpoint is not a public address (loopback only with PUSH_LOOPBACK_HUBS=true); nothing was sent';
    case 'tls_error':
      return 'tls_error: no trusted TLS connection to the hub';
    case 'connection_failed':
      return 'connection_failed: the hub could not be reached';
  }
}
