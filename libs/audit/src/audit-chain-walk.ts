import { KeyObject, verify } from 'node:crypto';
import { ChainRow, GENESIS_DIGEST, checkpointMessage, eventDigest } from './audit-chain';
import { StoredCheckpoint } from './audit-checkpoints';

/**
 * The one check of a chain (DECISIONS 11.2), free of any database: `AuditVerifier` feeds it the rows it
 * reads from audit_events, `audit verify-export` the lines of an export file. Both name the same
 * problem for the same change.
 */

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

/**
 * Walks one chain's events in chain order from position `from`, trusting the `prev_digest` stored at
 * `from` as its anchor (from 1 the anchor is the genesis digest). `push` answers the first problem;
 * after one, the walk is over. The digests at the positions in `keep` are kept for the checkpoints.
 */
export class ChainWalk {
  events = 0;
  head: { seq: number; digest: string } | null = null;
  readonly digests = new Map<number, string>();
  private expectedSeq: number;
  private expectedPrev: string | undefined;
  private previous?: ChainRow;

  /**
   * `anchor`: the digest the event at `from` must link to, when it is known from a signed checkpoint
   * (a chain pruned by retention: `from` is the position after the prune point, the anchor the digest
   * the checkpoint there signed; DECISIONS 11.3). Without it, from 1 the anchor is the genesis digest,
   * from a later position the `prev_digest` stored there is trusted.
   */
  constructor(
    readonly from: number,
    private readonly keep: Set<number>,
    anchor?: string,
  ) {
    this.expectedSeq = from;
    this.expectedPrev = anchor ?? (from === 1 ? GENESIS_DIGEST : undefined);
  }

  push(row: ChainRow): ChainProblem | undefined {
    const problem = linkProblem(row, this.previous, this.expectedSeq, this.expectedPrev);
    if (problem) return problem;
    const seq = Number(row.chain_seq);
    if (this.keep.has(seq)) this.digests.set(seq, row.digest!);
    this.events++;
    this.head = { seq, digest: row.digest! };
    this.previous = row;
    this.expectedSeq = seq + 1;
    this.expectedPrev = row.digest!;
    return undefined;
  }

  /**
   * Checks the checkpoints at or after `from`, oldest first, against the digests walked: the first
   * problem (a problem of the walk itself before a checkpoint's position comes first), and the
   * checkpoints that held.
   */
  checkpoints(
    signed: StoredCheckpoint[],
    walkProblem: ChainProblem | undefined,
    refusal: (checkpoint: StoredCheckpoint) => string | undefined,
  ): { problem?: ChainProblem; checked: number; last: { seq: number; digest: string; signedAt: string } | null } {
    let checked = 0;
    let last: { seq: number; digest: string; signedAt: string } | null = null;
    for (const checkpoint of signed) {
      if (checkpoint.seq < this.from) continue;
      if (walkProblem && walkProblem.chainSeq <= checkpoint.seq) break;
      const problem = this.checkpointProblem(checkpoint, refusal(checkpoint));
      if (problem) return { problem, checked, last };
      checked++;
      last = { seq: checkpoint.seq, digest: checkpoint.digest, signedAt: checkpoint.signedAt };
    }
    return { problem: walkProblem, checked, last };
  }

  private checkpointProblem(checkpoint: StoredCheckpoint, refusal: string | undefined): ChainProblem | undefined {
    if (refusal)
      return {
        kind: 'checkpoint',
        chainSeq: checkpoint.seq,
        detail: `the checkpoint of chain position ${checkpoint.seq} signed ${checkpoint.signedAt} is refused: ${refusal}`,
      };
    const digest = this.digests.get(checkpoint.seq);
    if (digest === undefined) {
      const end = this.head?.seq ?? this.from - 1;
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
}

function linkProblem(row: ChainRow, previous: ChainRow | undefined, expectedSeq: number, expectedPrev: string | undefined): ChainProblem | undefined {
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
  if (seq === expectedSeq && expectedPrev !== undefined) {
    return {
      kind: 'changed',
      chainSeq: seq,
      eventId: row.id,
      detail: `event ${row.id} (chain position ${seq}) does not link to the digest before it${expectedSeq === 1 ? '' : ' (the signed checkpoint it follows)'}: it was changed and its digest recomputed, or put in the place of the event that was there`,
    };
  }
  return { kind: 'inserted', chainSeq: seq, eventId: row.id, detail: `event ${row.id} holds chain position ${seq} twice or out of order` };
}

/** Where a chain pruned by retention starts again (DECISIONS 11.3): the last position removed, and the checkpoint signed there. */
export interface PrunePoint {
  /** The last chain position removed by retention (a checkpoint's position). */
  through: number;
  /** Events removed by retention in all. */
  events: number;
  /** When the last removal ran (ISO 8601). */
  at: string;
}

/**
 * The anchor of a walk that starts after a prune point: the digest the checkpoint at the prune point
 * signed, once that checkpoint is found and its signature holds; otherwise the problem (kind
 * `checkpoint`), and the walk cannot start.
 */
export function pruneAnchor(
  prune: PrunePoint,
  checkpoint: StoredCheckpoint | undefined,
  refusal: (checkpoint: StoredCheckpoint) => string | undefined,
): { anchor: string; problem?: undefined } | { anchor?: undefined; problem: ChainProblem } {
  if (!checkpoint) {
    return {
      problem: {
        kind: 'checkpoint',
        chainSeq: prune.through,
        detail: `the chain was pruned by retention up to position ${prune.through}, but the checkpoint signed there is missing: nothing anchors what remains`,
      },
    };
  }
  const refused = refusal(checkpoint);
  if (refused) {
    return {
      problem: {
        kind: 'checkpoint',
        chainSeq: checkpoint.seq,
        detail: `the checkpoint of chain position ${checkpoint.seq} signed ${checkpoint.signedAt}, which anchors the chain after its pruning by retention, is refused: ${refused}`,
      },
    };
  }
  return { anchor: checkpoint.digest };
}

/** Why a checkpoint's signature is refused by the audit key `key` (whose RFC 7638 thumbprint is `kid`), or undefined when that key signed exactly it. */
export function checkpointRefusal(checkpoint: StoredCheckpoint, key: KeyObject, kid: string): string | undefined {
  if (checkpoint.keyId !== kid) return `it names key ${checkpoint.keyId}, not the audit key`;
  const { keyId: _keyId, signature, ...signed } = checkpoint;
  const valid = verify('sha256', checkpointMessage(signed), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(signature, 'base64url'));
  return valid ? undefined : 'its signature does not verify with the audit key';
}
