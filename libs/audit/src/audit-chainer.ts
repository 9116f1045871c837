import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Clock } from '@app/common';
import { AppConfig } from '@app/config';
import { LOGGER, Logger } from '@app/observability';
import { SignerUnavailableError } from '@app/hsm';
import { Database, DatabaseUnavailableError } from '@app/persistence';
import { CHAIN_COLUMNS, ChainRow, GENESIS_DIGEST, eventDigest } from './audit-chain';
import { AuditCheckpoints } from './audit-checkpoints';

/** At most this many events per pass; a larger backlog (the first start after the migration) takes several passes. */
export const CHAIN_BATCH = 5000;

/** Reads a pass's events: the oldest without a digest, from the index of unchained events. */
export const CHAIN_SELECT = `SELECT ${CHAIN_COLUMNS} FROM audit_events WHERE digest IS NULL ORDER BY audit_events.id LIMIT ${CHAIN_BATCH}`;

/**
 * Writes a pass's links. `e.digest IS NULL` changes no row (the pass holds the lock, and read these
 * events without a digest in its transaction); it lets PostgreSQL find them in the small index of
 * unchained events: without it, a pass of a few thousand events joined them against the whole table,
 * by a sequential scan at 14,000 events on file and a full primary-key scan at 214,000 (issue 35: the
 * issuance bench counted the sequential scans).
 */
export const CHAIN_UPDATE = `UPDATE audit_events e SET chain_seq = u.seq, prev_digest = u.prev, digest = u.digest
  FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[]) AS u(id, seq, prev, digest)
 WHERE e.id = u.id AND e.digest IS NULL`;

/**
 * Links committed audit events into their organization's hash chain (DECISIONS 11.2). Writers insert
 * as before, without a digest, so no writer waits for another; every instance offers a pass every
 * AUDIT_CHAIN_INTERVAL_MS (followed by a checkpoint pass) and the one that gets the transaction-level advisory lock does it (the
 * others skip: no queue of waiting instances). A pass reads, in one statement (one snapshot), the
 * events that have no digest yet, oldest id first, and appends them to their chains. An event whose
 * transaction commits after that snapshot is not skipped: it still has no digest, so the next pass
 * takes it. The chain is thus the order in which events became visible: one committed before a pass
 * began comes before any that committed after it.
 */
@Injectable()
export class AuditChainer implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;

  constructor(
    private readonly db: Database,
    private readonly checkpoints: AuditCheckpoints,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.tick(), this.config.auditChain.intervalMs);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  private async tick(): Promise<void> {
    if (this.running) return;
    this.running = this.pass().catch((error: unknown) => {
      // An outage of the database or the HSM is logged once where it is noticed; the next pass retries.
      if (error instanceof DatabaseUnavailableError || error instanceof SignerUnavailableError) return;
      this.logger.error({ err: error }, 'audit chain pass failed; the next pass retries');
    });
    try {
      await this.running;
    } finally {
      this.running = undefined;
    }
  }

  /** Chains what committed, then signs the heads that are due (AuditCheckpoints). */
  async pass(): Promise<void> {
    await this.chainOnce();
    await this.checkpoints.checkpointOnce();
  }

  /** One pass: the number of events chained, or undefined when another instance holds the pass. */
  async chainOnce(): Promise<number | undefined> {
    return this.db.transaction(async (tx) => {
      const [lock] = await this.db.query<{ locked: boolean }>("SELECT pg_try_advisory_xact_lock(hashtextextended('audit-chain', 0)) AS locked", [], tx);
      if (!lock.locked) return undefined;
      const rows = await this.db.query<ChainRow>(CHAIN_SELECT, [], tx);
      if (rows.length === 0) return 0;
      const orgs = [...new Set(rows.map((row) => row.org_id))];
      const heads = new Map<string | null, { seq: number; digest: string; known: boolean }>();
      for (const head of await this.db.query<{ org_id: string | null; chain_seq: string; digest: string }>(
        'SELECT org_id, chain_seq::text AS chain_seq, digest FROM audit_chain_heads WHERE org_id = ANY($1::text[]) OR (org_id IS NULL AND $2)',
        [orgs.filter((org) => org !== null), orgs.includes(null)],
        tx,
      )) {
        heads.set(head.org_id, { seq: Number(head.chain_seq), digest: head.digest, known: true });
      }
      const ids: string[] = [];
      const seqs: number[] = [];
      const prevs: string[] = [];
      const digests: string[] = [];
      for (const row of rows) {
        const head = heads.get(row.org_id) ?? { seq: 0, digest: GENESIS_DIGEST, known: false };
        const digest = eventDigest(row, head.digest);
        ids.push(row.id);
        seqs.push(head.seq + 1);
        prevs.push(head.digest);
        digests.push(digest);
        heads.set(row.org_id, { seq: head.seq + 1, digest, known: head.known });
      }
      await this.db.query(CHAIN_UPDATE, [ids, seqs, prevs, digests], tx);
      const changed = orgs.map((org) => ({ org, ...heads.get(org)! }));
      const known = changed.filter((head) => head.known);
      const fresh = changed.filter((head) => !head.known);
      if (known.length > 0) {
        await this.db.query(
          `UPDATE audit_chain_heads h SET chain_seq = u.seq, digest = u.digest
             FROM unnest($1::text[], $2::bigint[], $3::text[]) AS u(org_id, seq, digest) WHERE h.org_id IS NOT DISTINCT FROM u.org_id`,
          [known.map((head) => head.org), known.map((head) => head.seq), known.map((head) => head.digest)],
          tx,
        );
      }
      if (fresh.length > 0) {
        // A new chain's first checkpoint is due AUDIT_CHECKPOINT_INTERVAL_S after it began (or after AUDIT_CHECKPOINT_EVENTS events).
        await this.db.query(
          `INSERT INTO audit_chain_heads (org_id, chain_seq, digest, checkpoint_at)
           SELECT u.org_id, u.seq, u.digest, $4 FROM unnest($1::text[], $2::bigint[], $3::text[]) AS u(org_id, seq, digest)`,
          [fresh.map((head) => head.org), fresh.map((head) => head.seq), fresh.map((head) => head.digest), this.clock.now()],
          tx,
        );
      }
      return rows.length;
    });
  }
}
