import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Clock, isoTimestamp } from '@app/common';
import { AppConfig } from '@app/config';
import { SignerUnavailableError } from '@app/hsm';
import { LOGGER, Logger } from '@app/observability';
import { Database, DatabaseUnavailableError, Transaction } from '@app/persistence';
import { CHAIN_COLUMNS, ChainRow, GENESIS_DIGEST } from './audit-chain';
import { ChainWalk, checkpointRefusal } from './audit-chain-walk';
import { AuditCheckpoints } from './audit-checkpoints';
import { AuditLog } from './audit-log';
import { ofChain } from './audit-verifier';

/** At most about this many events leave one chain per pass (a checkpoint's span may exceed it); the next pass goes on. */
export const PRUNE_BATCH = 10_000;

/** The organization whose `auditRetentionDays` also governs the platform's own chain (events of no organization). */
const PLATFORM_ORG = 'platform';

/** Where each organization's retention is set (organization settings, owned by libs/accounts): org id -> days. */
export type RetentionSettingsSource = () => Promise<Map<string, number>>;

/** What one pass removed from one chain. */
export interface ChainPruned {
  org: string | null;
  /** Events removed. */
  events: number;
  /** The chain position the chain now starts after: the checkpoint removed up to. */
  throughSeq: number;
  retentionDays: number;
}

/**
 * The retention of the audit log (DECISIONS 11.3). An organization keeps its events for
 * `auditRetentionDays` (its setting; never below AUDIT_RETENTION_MIN_DAYS; absent: for ever). Every
 * AUDIT_RETENTION_INTERVAL_S each instance offers a pass; the one that gets the advisory lock runs it
 * (the others skip). A pass removes, per chain, the oldest events up to the last signed checkpoint
 * that has only events older than the retention before it, and nothing after the last checkpoint,
 * however old: so what remains still verifies, anchored on that checkpoint. Before it removes
 * anything it checks that the events removed link up to the digest the checkpoint signed, and the
 * signature: a prefix that does not verify stays, as evidence. Each removal is a platform event
 * `audit.pruned`.
 */
@Injectable()
export class AuditRetention implements OnApplicationBootstrap, OnApplicationShutdown {
  private source?: RetentionSettingsSource;
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;

  constructor(
    private readonly db: Database,
    private readonly checkpoints: AuditCheckpoints,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** libs/accounts tells where the organizations' settings are read (it owns them). */
  useSettings(source: RetentionSettingsSource): void {
    this.source = source;
  }

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.tick(), this.config.auditRetention.intervalS * 1000);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  private async tick(): Promise<void> {
    if (this.running) return;
    this.running = this.pruneOnce().catch((error: unknown) => {
      if (error instanceof DatabaseUnavailableError || error instanceof SignerUnavailableError) return;
      this.logger.error({ err: error }, 'audit retention pass failed; the next pass retries');
    });
    try {
      await this.running;
    } finally {
      this.running = undefined;
    }
  }

  /**
   * One pass over every chain with a retention: what was removed, or undefined when another instance
   * holds the pass. Without the HSM (nothing can check a checkpoint) nothing is removed.
   */
  async pruneOnce(): Promise<ChainPruned[] | undefined> {
    if (!this.source || !this.checkpoints.available) return [];
    const settings = await this.source();
    const chains: { org: string | null; days: number }[] = [];
    for (const [org, days] of settings) {
      const effective = Math.max(days, this.config.auditRetention.minDays);
      chains.push({ org, days: effective });
      if (org === PLATFORM_ORG) chains.push({ org: null, days: effective });
    }
    if (chains.length === 0) return [];
    return this.db.transaction(async (tx) => {
      const [lock] = await this.db.query<{ locked: boolean }>("SELECT pg_try_advisory_xact_lock(hashtextextended('audit-retention', 0)) AS locked", [], tx);
      if (!lock.locked) return undefined;
      // The DELETE the append-only trigger lets through, for this transaction only (DECISIONS 11.3).
      await this.db.query("SELECT set_config('audit.retention_prune', 'on', true)", [], tx);
      const pruned: ChainPruned[] = [];
      for (const chain of chains) {
        const result = await this.pruneChain(chain.org, chain.days, tx);
        if (result) pruned.push(result);
      }
      return pruned;
    });
  }

  private async pruneChain(org: string | null, days: number, tx: Transaction): Promise<ChainPruned | undefined> {
    const now = this.clock.now();
    const cutoff = new Date(now.getTime() - days * 86_400_000);
    const orgParams = org === null ? [] : [org];
    const [point] = await this.db.query<{ pruned_seq: string }>(
      'SELECT pruned_seq::text AS pruned_seq FROM audit_prune_points WHERE org_id IS NOT DISTINCT FROM $1',
      [org],
      tx,
    );
    const prunedSeq = point ? Number(point.pruned_seq) : 0;
    // The first position (after the prune point, in chain order) of an event young enough to stay: nothing from it on leaves.
    const [young] = await this.db.query<{ chain_seq: string }>(
      `SELECT chain_seq::text AS chain_seq FROM audit_events
        WHERE ${ofChain(org, 3)} AND chain_seq > $1 AND occurred_at >= $2 ORDER BY audit_events.chain_seq LIMIT 1`,
      [prunedSeq, cutoff, ...orgParams],
      tx,
    );
    const limit = young ? Number(young.chain_seq) : Number.MAX_SAFE_INTEGER;
    const candidates = await this.checkpoints.list(org, tx);
    const behind = candidates.filter((checkpoint) => checkpoint.seq > prunedSeq && checkpoint.seq < limit);
    if (behind.length === 0) return undefined;
    // The furthest checkpoint within one batch; when even the first is further, that one.
    const target = [...behind].reverse().find((checkpoint) => checkpoint.seq - prunedSeq <= PRUNE_BATCH) ?? behind[0];
    // What leaves must be what the checkpoint signed: walk it, from the last prune point's checkpoint (or the genesis).
    const { key, kid } = await this.checkpoints.verificationKey();
    const anchor = prunedSeq === 0 ? GENESIS_DIGEST : candidates.find((checkpoint) => checkpoint.seq === prunedSeq)?.digest;
    const refused = checkpointRefusal(target, key, kid);
    const walk = new ChainWalk(prunedSeq + 1, new Set([target.seq]), anchor);
    let problem = refused
      ? `the checkpoint at ${target.seq} is refused: ${refused}`
      : anchor === undefined
        ? 'the checkpoint at the prune point is missing'
        : undefined;
    let cursor = prunedSeq;
    while (!problem && cursor < target.seq) {
      const rows = await this.db.query<ChainRow>(
        `SELECT ${CHAIN_COLUMNS} FROM audit_events
          WHERE ${ofChain(org, 3)} AND chain_seq > $1 AND chain_seq <= $2 ORDER BY audit_events.chain_seq, audit_events.id LIMIT 2000`,
        [cursor, target.seq, ...orgParams],
        tx,
      );
      if (rows.length === 0) break;
      for (const row of rows) {
        const found = walk.push(row);
        if (found) {
          problem = found.detail;
          break;
        }
      }
      cursor = Number(rows[rows.length - 1].chain_seq);
    }
    if (!problem && walk.digests.get(target.seq) !== target.digest) problem = `the events up to ${target.seq} do not lead to the digest the checkpoint signed`;
    if (problem) {
      this.logger.error(
        { org, throughSeq: target.seq, problem },
        'audit retention: the events before a checkpoint do not verify; they stay (run audit verify)',
      );
      return undefined;
    }
    await this.db.query(
      `INSERT INTO audit_prune_points (org_id, pruned_seq, pruned_events, pruned_at) VALUES ($1, $2, 0, $3)
       ON CONFLICT (org_id) DO UPDATE SET pruned_seq = EXCLUDED.pruned_seq, pruned_at = EXCLUDED.pruned_at`,
      [org, target.seq, now],
      tx,
    );
    const [removed] = await this.db.query<{ n: number }>(
      `WITH removed AS (DELETE FROM audit_events WHERE ${ofChain(org, 3)} AND chain_seq > $1 AND chain_seq <= $2 RETURNING 1)
       SELECT count(*)::int AS n FROM removed`,
      [prunedSeq, target.seq, ...orgParams],
      tx,
    );
    await this.db.query('UPDATE audit_prune_points SET pruned_events = pruned_events + $2 WHERE org_id IS NOT DISTINCT FROM $1', [org, removed.n], tx);
    await this.audit.record(
      {
        org: null,
        actor: 'system',
        action: 'audit.pruned',
        target: org ?? '(platform)',
        outcome: 'success',
        details: { org, events: removed.n, throughSeq: target.seq, checkpointSignedAt: target.signedAt, retentionDays: days, cutoff: isoTimestamp(cutoff) },
      },
      tx,
    );
    this.logger.info({ org, events: removed.n, throughSeq: target.seq }, 'audit retention removed events behind a signed checkpoint');
    return { org, events: removed.n, throughSeq: target.seq, retentionDays: days };
  }
}
