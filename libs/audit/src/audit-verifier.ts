import { Injectable } from '@nestjs/common';
import { Database } from '@app/persistence';
import { CHAIN_COLUMNS, ChainRow } from './audit-chain';
import { ChainProblem, ChainWalk, PrunePoint, checkpointRefusal, pruneAnchor } from './audit-chain-walk';
import { AuditCheckpoints, StoredCheckpoint } from './audit-checkpoints';
import { AuditRepository } from './audit.repository';

/** Rows read per round trip while walking a chain. */
const WALK_BATCH = 2000;

export interface ChainVerification {
  org: string | null;
  /** True when no problem was found. */
  verified: boolean;
  /** The first chain position walked (1, or --from; after a prune point, the position after it). */
  from: number;
  /**
   * Present when retention removed the chain's oldest events (DECISIONS 11.3): up to which position,
   * how many, when, and the signed checkpoint at that position the rest is anchored on.
   */
  pruned?: PrunePoint & { checkpoint: { seq: number; digest: string; signedAt: string } | null };
  /** Events walked. */
  events: number;
  /** The last chain position walked and its digest (null for an empty chain). */
  head: { seq: number; digest: string } | null;
  /** Events committed but not yet chained (the chainer takes them within AUDIT_CHAIN_INTERVAL_MS). */
  unchained: number;
  /** Signed checkpoints checked (signature, and the digest at their position); null without an HSM. */
  checkpoints: number | null;
  /** The last checkpoint checked: everything up to its position verifies against a signature. */
  lastCheckpoint: { seq: number; digest: string; signedAt: string } | null;
  problem?: ChainProblem;
}

/** Re-walks an organization's chain (DECISIONS 11.2) and names the first event changed, removed or inserted. */
@Injectable()
export class AuditVerifier {
  constructor(
    private readonly db: Database,
    private readonly checkpoints: AuditCheckpoints,
    private readonly events: AuditRepository,
  ) {}

  /**
   * `org` null is the platform's chain (events of no organization). From `from` (default 1) the walk
   * trusts the `prev_digest` stored on the event at `from` as its anchor; from 1 the anchor is the
   * genesis digest.
   */
  async verifyChain(org: string | null, requestedFrom = 1): Promise<ChainVerification> {
    const all = await this.checkpoints.list(org);
    const prune = await this.events.prunePoint(org);
    // A chain pruned by retention starts after its prune point, anchored on the checkpoint signed there.
    const from = prune && requestedFrom <= prune.through ? prune.through + 1 : requestedFrom;
    const signed = this.checkpoints.available ? all.filter((checkpoint) => checkpoint.seq >= from) : undefined;
    const key = this.checkpoints.available ? await this.checkpoints.verificationKey() : undefined;
    const refusal = (checkpoint: StoredCheckpoint) => (key ? checkpointRefusal(checkpoint, key.key, key.kid) : undefined);
    let anchor: string | undefined;
    let anchorProblem: ChainProblem | undefined;
    let pruned: ChainVerification['pruned'];
    if (prune) {
      const at = all.find((checkpoint) => checkpoint.seq === prune.through);
      pruned = { ...prune, checkpoint: at ? { seq: at.seq, digest: at.digest, signedAt: at.signedAt } : null };
      if (from === prune.through + 1) ({ anchor, problem: anchorProblem } = pruneAnchor(prune, at, refusal));
    }
    const walk = new ChainWalk(from, new Set(signed?.map((checkpoint) => checkpoint.seq)), anchor);
    const walkProblem = anchorProblem ?? (await this.walk(org, walk));
    const unchained = await this.unchained(org);
    const base = { org, from, ...(pruned ? { pruned } : {}), events: walk.events, head: walk.head, unchained };
    if (!signed) return { ...base, verified: !walkProblem, checkpoints: null, lastCheckpoint: null, ...(walkProblem ? { problem: walkProblem } : {}) };
    const { problem, checked, last } = walk.checkpoints(signed, walkProblem, refusal);
    return { ...base, verified: !problem, checkpoints: checked, lastCheckpoint: last, ...(problem ? { problem } : {}) };
  }

  /** Feeds the chain's rows from `walk.from` on to `walk`, batch by batch; its first problem. */
  private async walk(org: string | null, walk: ChainWalk): Promise<ChainProblem | undefined> {
    let cursor = walk.from - 1;
    for (;;) {
      const rows = await this.db.query<ChainRow>(
        `SELECT ${CHAIN_COLUMNS} FROM audit_events
          WHERE ${ofChain(org, 2)} AND chain_seq > $1 ORDER BY audit_events.chain_seq, audit_events.id LIMIT ${WALK_BATCH}`,
        org === null ? [cursor] : [cursor, org],
      );
      for (const row of rows) {
        const problem = walk.push(row);
        if (problem) return problem;
      }
      if (rows.length < WALK_BATCH) return undefined;
      cursor = Number(rows[rows.length - 1].chain_seq);
    }
  }

  private async unchained(org: string | null): Promise<number> {
    const [row] = await this.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM audit_events WHERE digest IS NULL AND ${ofChain(org, 1)}`,
      org === null ? [] : [org],
    );
    return row.n;
  }
}

/** The condition that selects one chain's rows, in a form the (org_id, chain_seq) index serves. */
export function ofChain(org: string | null, placeholder: number): string {
  return org === null ? 'org_id IS NULL' : `org_id = $${placeholder}`;
}
