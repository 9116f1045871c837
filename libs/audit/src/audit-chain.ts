import { hash } from 'node:crypto';

/**
 * The hash chain of the audit log (DECISIONS 11.2; docs/audit-events.md, "Tamper evidence"): the
 * encoding every digest and every checkpoint signature is computed over. The chainer, the verifier
 * (API and command line) and an offline verifier must agree on it byte for byte; change it only with
 * a new version number `v`.
 */

/** The `prev_digest` of the first event of a chain. */
export const GENESIS_DIGEST = '0'.repeat(64);

/**
 * JSON with object members sorted by their names (UTF-16 code units, as RFC 8785), no whitespace,
 * strings and numbers as `JSON.stringify` writes them (which is RFC 8785's form for both). Arrays keep
 * their order; `undefined` members are left out, as `JSON.stringify` does.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  const members = Object.keys(value)
    .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
  return `{${members.join(',')}}`;
}

/** An audit event as the chain reads it (`CHAIN_COLUMNS`). */
export interface ChainRow {
  id: string;
  org_id: string | null;
  /** occurred_at in UTC with its microseconds, `YYYY-MM-DDTHH:MM:SS.ffffffZ`. */
  occurred: string;
  actor: string;
  action: string;
  code: number;
  target: string | null;
  outcome: string;
  source_address: string | null;
  correlation_id: string | null;
  details: Record<string, unknown>;
  chain_seq: string | null;
  prev_digest: string | null;
  digest: string | null;
}

/**
 * The select list of a `ChainRow` from audit_events: occurred_at as text, so that no microsecond is lost
 * to a JS Date. Its id and chain_seq are text: order by `audit_events.id` / `audit_events.chain_seq`.
 */
export const CHAIN_COLUMNS = `id::text AS id, org_id, to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS occurred,
  actor, action, code, target, outcome, source_address, correlation_id, details, chain_seq::text AS chain_seq, prev_digest, digest`;

/**
 * An event's digest: lowercase hex SHA-256 of the UTF-8 bytes of the canonical JSON of its content and
 * the digest before it. The chain position (`chain_seq`) is not covered: the `prev` link fixes the order.
 */
export function eventDigest(row: ChainRow, prev: string): string {
  return hash('sha256', canonicalJson(eventContent(row, prev)), 'hex');
}

/** What an event's digest covers (before canonical JSON), as an export carries it. */
export interface EventContent {
  v: 1;
  id: string;
  org: string | null;
  occurred: string;
  actor: string;
  action: string;
  code: number;
  target: string | null;
  outcome: string;
  sourceAddress: string | null;
  correlationId: string | null;
  details: Record<string, unknown>;
  prev: string;
}

export function eventContent(row: ChainRow, prev: string): EventContent {
  return {
    v: 1,
    id: row.id,
    org: row.org_id,
    occurred: row.occurred,
    actor: row.actor,
    action: row.action,
    code: row.code,
    target: row.target,
    outcome: row.outcome,
    sourceAddress: row.source_address,
    correlationId: row.correlation_id,
    details: row.details,
    prev,
  };
}

/** The chained row an export line describes (the inverse of `eventContent`). */
export function rowOfContent(content: EventContent, chainSeq: string, digest: string): ChainRow {
  return {
    id: content.id,
    org_id: content.org,
    occurred: content.occurred,
    actor: content.actor,
    action: content.action,
    code: content.code,
    target: content.target,
    outcome: content.outcome,
    source_address: content.sourceAddress,
    correlation_id: content.correlationId,
    details: content.details,
    chain_seq: chainSeq,
    prev_digest: content.prev,
    digest,
  };
}

/** A signed chain head. */
export interface Checkpoint {
  org: string | null;
  seq: number;
  digest: string;
  /** ISO 8601, UTC, milliseconds. */
  signedAt: string;
}

/** The bytes a checkpoint's signature covers: the canonical JSON of the checkpoint, with `v` and `type`. */
export function checkpointMessage(checkpoint: Checkpoint): Buffer {
  return Buffer.from(canonicalJson({ v: 1, type: 'audit-checkpoint', ...checkpoint }), 'utf8');
}
