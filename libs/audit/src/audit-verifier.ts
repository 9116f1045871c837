import { Injectable } from '@nestjs/common';
import { Database } from '@app/persistence';
import { CHAIN_COLUMNS, ChainRow, GENESIS_DIGEST, eventDigest } from './audit-chain';
import { AuditCheckpoints, StoredCheckpoint } from './audit-checkpoints';

/** Rows read per round trip while walking a chain. */
const WALK_BATCH = 2000;

/**
 * What the walk found first. `changed`: the event's content no longer gives its digest, or (when the
 * digest was recomputed too) the next event no longer links to it. `removed`: an event is missing
 * between two others, or after the last one up to a signed checkpoint. `inserted`: an event that its
 * successor skips. `rewritten`: the events up to a checkpoint link up, but not to the digest it signed
 * (the chain was recomputed after a change). `checkpoint`: a checkpoint whose signature is refused.
 */
export interface ChainProblem {
  kind: 'changed' | 'removed' | 'inserted' | 'rewritten' | 'checkpoint';
  /** The chain position of the event named (for `removed`, the position that is missing). */
  chainSeq: number;
  /** The event changed or inserted; for `removed`, absent (the row is gone). */
  eventId?: string;
  /** The chained events either side of a removal. */
  after?: string;
  before?: string;
  detail: string;
}

export interface ChainVerification {
  org: string | null;
  /** True when no problem was found. */
  verified: boolean;
  /** The first chain position walked (1, or --from). */
  from: number;
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
  ) {}

  /**
   * `org` null is the platform's chain (events of no organization). From `from` (default 1) the walk
   * trusts the `prev_digest` stored on the event at `from` as its anchor; from 1 the anchor is the
   * genesis digest.
   */
  async verifyChain(org: string | null, from = 1): Promise<ChainVerification> {
    const signed = this.checkpoints.available ? (await this.checkpoints.list(org)).filter((checkpoint) => checkpoint.seq >= from) : undefined;
    const walked = await this.walk(org, from, new Set(signed?.map((checkpoint) => checkpoint.seq)));
    const result: ChainVerification = { ...walked.result, checkpoints: signed ? 0 : null, lastCheckpoint: null };
    for (const checkpoint of signed ?? []) {
      // A problem in the chain before this checkpoint's position is the first one.
      if (result.problem && result.problem.chainSeq <= checkpoint.seq) break;
      const problem = await this.checkCheckpoint(checkpoint, walked.digests, result);
      if (problem) return { ...result, verified: false, problem };
      result.checkpoints!++;
      result.lastCheckpoint = { seq: checkpoint.seq, digest: checkpoint.digest, signedAt: checkpoint.signedAt };
    }
    return result;
  }

  private async checkCheckpoint(checkpoint: StoredCheckpoint, digests: Map<number, string>, walked: ChainVerification): Promise<ChainProblem | undefined> {
    const refusal = await this.checkpoints.refusal(checkpoint);
    if (refusal)
      return {
        kind: 'checkpoint',
        chainSeq: checkpoint.seq,
        detail: `the checkpoint of chain position ${checkpoint.seq} signed ${checkpoint.signedAt} is refused: ${refusal}`,
      };
    const digest = digests.get(checkpoint.seq);
    if (digest === undefined) {
      const end = walked.head?.seq ?? walked.from - 1;
      return {
        kind: 'removed',
        chainSeq: end + 1,
        detail: `chain positions ${end + 1}-${checkpoint.seq} are missing: the chain ends at ${end}, but a checkpoint signed ${checkpoint.signedAt} covers up to ${checkpoint.seq}`,
      };
    }
    if (digest !== checkpoint.digest) {
      return {
        kind: 'rewritten',
        chainSeq: checkpoint.seq,
        detail: `the chain up to position ${checkpoint.seq} was recomputed: its digest there is not the one the checkpoint signed ${checkpoint.signedAt}`,
      };
    }
    return undefined;
  }

  private async walk(org: string | null, from: number, keep: Set<number>): Promise<{ result: ChainVerification; digests: Map<number, string> }> {
    const digests = new Map<number, string>();
    const result: ChainVerification = { org, verified: true, from, events: 0, head: null, unchained: 0, checkpoints: null, lastCheckpoint: null };
    let expectedSeq = from;
    let expectedPrev: string | undefined = from === 1 ? GENESIS_DIGEST : undefined;
    let previous: ChainRow | undefined;
    let cursor = from - 1;
    for (;;) {
      const rows = await this.db.query<ChainRow>(
        `SELECT ${CHAIN_COLUMNS} FROM audit_events
          WHERE ${ofChain(org, 2)} AND chain_seq > $1 ORDER BY audit_events.chain_seq, audit_events.id LIMIT ${WALK_BATCH}`,
        org === null ? [cursor] : [cursor, org],
      );
      for (const row of rows) {
        const problem = this.check(row, previous, expectedSeq, expectedPrev);
        if (problem) return { result: { ...result, verified: false, problem, unchained: await this.unchained(org) }, digests };
        if (keep.has(Number(row.chain_seq))) digests.set(Number(row.chain_seq), row.digest!);
        result.events++;
        result.head = { seq: Number(row.chain_seq), digest: row.digest! };
        previous = row;
        expectedSeq = Number(row.chain_seq) + 1;
        expectedPrev = row.digest!;
      }
      if (rows.length < WALK_BATCH) break;
      cursor = Number(rows[rows.length - 1].chain_seq);
    }
    return { result: { ...result, unchained: await this.unchained(org) }, digests };
  }

  private check(row: ChainRow, previous: ChainRow | undefined, expectedSeq: number, expectedPrev: string | undefined): ChainProblem | undefined {
    const seq = Number(row.chain_seq);
    if (eventDigest(row, row.prev_digest ?? '') !== row.digest) {
      return {
        kind: 'changed',
        chainSeq: seq,
        eventId: row.id,
        detail: `event ${row.id} (chain position ${seq}) no longer matches its digest: its content was changed after it was chained`,
      };
    }
    const linked = expectedPrev === undefined || row.prev_digest === expectedPrev;
    if (seq === expectedSeq && linked) return undefined;
    if (previous && row.prev_digest === previous.prev_digest) {
      return {
        kind: 'inserted',
        chainSeq: Number(previous.chain_seq),
        eventId: previous.id,
        detail: `event ${previous.id} (chain position ${previous.chain_seq}) was inserted: event ${row.id} after it links to the event before it`,
      };
    }
    if (seq > expectedSeq) {
      return {
        kind: 'removed',
        chainSeq: expectedSeq,
        after: previous?.id,
        before: row.id,
        detail: `chain position ${expectedSeq === seq - 1 ? expectedSeq : `${expectedSeq}-${seq - 1}`} is missing: removed between event ${previous?.id ?? '(start)'} and event ${row.id}`,
      };
    }
    if (previous) {
      return {
        kind: 'changed',
        chainSeq: Number(previous.chain_seq),
        eventId: previous.id,
        detail: `event ${previous.id} (chain position ${previous.chain_seq}) was changed and its digest recomputed, or an event after it removed and the rest renumbered: event ${row.id} does not link to it`,
      };
    }
    return { kind: 'inserted', chainSeq: seq, eventId: row.id, detail: `event ${row.id} holds chain position ${seq} twice or out of order` };
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
