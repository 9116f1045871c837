import { Injectable } from '@nestjs/common';
import { createPublicKey } from 'node:crypto';
import { SigningJwk, signingJwkFromSpki } from '@app/hsm';
import { Database } from '@app/persistence';
import { CHAIN_COLUMNS, ChainRow, EventContent, checkpointMessage, eventContent, rowOfContent } from './audit-chain';
import { ChainProblem, ChainWalk, checkpointRefusal, pruneAnchor } from './audit-chain-walk';
import { AuditCheckpoints, StoredCheckpoint } from './audit-checkpoints';
import { ChainVerification, ofChain } from './audit-verifier';
import { AuditRepository } from './audit.repository';

/**
 * `audit export` and `audit verify-export` (DECISIONS 11.2; docs/audit-events.md, "Offline verification"):
 * one chain as JSON lines that verify with no database, by the command line on another machine or by
 * ops/audit-export-offline.js and openssl.
 */
export const AUDIT_EXPORT_FORMAT = 'audit-export/1';

/** The first line: the format, the chain, and the public key the checkpoints were signed with. */
export interface ExportHeader {
  format: typeof AUDIT_EXPORT_FORMAT;
  org: string | null;
  from: number;
  key: SigningJwk;
  /**
   * Present when retention removed the chain's oldest events (DECISIONS 11.3): the last position
   * removed (`from` is the one after it) and how many. The checkpoint signed at `through` is among the
   * lines; its digest is what the first event links to.
   */
  pruned?: { through: number; events: number; at: string };
}

/** An event: its chain position and digests, and the content its digest covers (sha256 of its canonical JSON). */
export interface ExportEvent {
  type: 'event';
  chain_seq: number;
  prev_digest: string;
  digest: string;
  content: EventContent;
}

/** A checkpoint: the signed head, the exact message signed (UTF-8) and its ES256 signature (raw r||s, base64url). */
export interface ExportCheckpoint {
  type: 'checkpoint';
  org: string | null;
  seq: number;
  digest: string;
  signedAt: string;
  keyId: string;
  message: string;
  signature: string;
}

const EXPORT_BATCH = 2000;

@Injectable()
export class AuditExporter {
  constructor(
    private readonly db: Database,
    private readonly checkpoints: AuditCheckpoints,
    private readonly events: AuditRepository,
  ) {}

  /** Writes the chain of `org` (null: the platform's) from position `from` as lines, each given to `write` without its line break. */
  async export(org: string | null, requestedFrom: number, write: (line: string) => void): Promise<void> {
    const { key } = await this.checkpoints.verificationKey();
    // After a prune point the export starts at the position after it, anchored on the checkpoint there.
    const prune = await this.events.prunePoint(org);
    const anchored = prune !== undefined && requestedFrom <= prune.through + 1;
    const from = prune && requestedFrom <= prune.through ? prune.through + 1 : requestedFrom;
    const header: ExportHeader = {
      format: AUDIT_EXPORT_FORMAT,
      org,
      from,
      key: signingJwkFromSpki(key.export({ format: 'der', type: 'spki' })),
      ...(anchored ? { pruned: { through: prune.through, events: prune.events, at: prune.at } } : {}),
    };
    write(JSON.stringify(header));
    let cursor = from - 1;
    for (;;) {
      const rows = await this.db.query<ChainRow>(
        `SELECT ${CHAIN_COLUMNS} FROM audit_events
          WHERE ${ofChain(org, 2)} AND chain_seq > $1 ORDER BY audit_events.chain_seq, audit_events.id LIMIT ${EXPORT_BATCH}`,
        org === null ? [cursor] : [cursor, org],
      );
      for (const row of rows) {
        const line: ExportEvent = {
          type: 'event',
          chain_seq: Number(row.chain_seq),
          prev_digest: row.prev_digest!,
          digest: row.digest!,
          content: eventContent(row, row.prev_digest!),
        };
        write(JSON.stringify(line));
      }
      if (rows.length < EXPORT_BATCH) break;
      cursor = Number(rows[rows.length - 1].chain_seq);
    }
    for (const checkpoint of await this.checkpoints.list(org)) {
      if (checkpoint.seq < (anchored ? from - 1 : from)) continue;
      const { keyId, signature, ...signed } = checkpoint;
      const line: ExportCheckpoint = { type: 'checkpoint', ...signed, keyId, message: checkpointMessage(signed).toString('utf8'), signature };
      write(JSON.stringify(line));
    }
  }
}

/** The outcome of `verifyExport`: a chain verification, and which key checked the checkpoints. */
export interface ExportVerification extends ChainVerification {
  /** `given`: the key the verifier named (--key); `export`: the key in the export's first line, which proves nothing unless compared with the published one. */
  key: { kid: string; source: 'given' | 'export' };
  /** The line of the export the problem was found on (1 is the header). */
  line?: number;
}

/**
 * Verifies an export's lines (DECISIONS 11.2) with the same walk and checkpoint check as `AuditVerifier`,
 * with `key` (PEM or JWK text) or, without it, the key the export names. A line that is not an export
 * line is a problem of kind `changed` naming the line.
 */
export function verifyExport(lines: string[], keyText?: string): ExportVerification {
  const parsed = lines.map((text, index) => ({ text, number: index + 1 })).filter((line) => line.text.trim() !== '');
  if (parsed.length === 0) throw new ExportFormatError('the export is empty');
  const header = parseLine<ExportHeader>(parsed[0].text, parsed[0].number);
  if (header.format !== AUDIT_EXPORT_FORMAT) throw new ExportFormatError(`line 1 is not the header of an ${AUDIT_EXPORT_FORMAT} export`);
  const key = keyText === undefined ? publicKeyOf(JSON.stringify(header.key)) : publicKeyOf(keyText);
  const kid = signingJwkFromSpki(key.export({ format: 'der', type: 'spki' })).kid;
  const org = header.org;
  const from = Number.isSafeInteger(header.from) && header.from >= 1 ? header.from : 1;
  const events: { row: ChainRow; line: number }[] = [];
  const checkpoints: { checkpoint: StoredCheckpoint; message: string; line: number }[] = [];
  let formatProblem: { problem: ChainProblem; line: number } | undefined;
  for (const { text, number } of parsed.slice(1)) {
    const line = parseLine<ExportEvent | ExportCheckpoint>(text, number);
    if (line.type === 'event') {
      const content = line.content;
      if (!content || typeof content !== 'object' || content.prev !== line.prev_digest || !Number.isSafeInteger(line.chain_seq)) {
        formatProblem ??= {
          line: number,
          problem: {
            kind: 'changed',
            chainSeq: Number(line.chain_seq) || 0,
            eventId: content?.id,
            detail: `event ${content?.id ?? '(no id)'} on line ${number}: its prev_digest, chain_seq or content was changed`,
          },
        };
        continue;
      }
      events.push({ row: rowOfContent(content, String(line.chain_seq), line.digest), line: number });
    } else if (line.type === 'checkpoint') {
      const { org: cOrg, seq, digest, signedAt, keyId, signature, message } = line;
      checkpoints.push({ checkpoint: { org: cOrg, seq, digest, signedAt, keyId, signature }, message, line: number });
    } else {
      throw new ExportFormatError(`line ${number} is neither an event nor a checkpoint`);
    }
  }
  const refusal = (checkpoint: StoredCheckpoint): string | undefined => {
    const entry = checkpoints.find((c) => c.checkpoint === checkpoint)!;
    if (checkpoint.org !== org) return `it is a checkpoint of ${checkpoint.org ?? '(platform)'}, not of this chain`;
    const { keyId: _keyId, signature: _signature, ...signed } = checkpoint;
    if (entry.message !== checkpointMessage(signed).toString('utf8')) return 'its message is not the checkpoint it carries';
    return checkpointRefusal(checkpoint, key, kid);
  };
  // A pruned chain (DECISIONS 11.3): the first event links to the digest the checkpoint at the prune point signed.
  const pruned = header.pruned && Number.isSafeInteger(header.pruned.through) && header.pruned.through === from - 1 ? header.pruned : undefined;
  let anchor: string | undefined;
  let anchorProblem: { problem: ChainProblem; line: number } | undefined;
  if (pruned) {
    const entry = checkpoints.find((c) => c.checkpoint.seq === pruned.through);
    const found = pruneAnchor(pruned, entry?.checkpoint, refusal);
    if (found.problem) anchorProblem = { problem: found.problem, line: entry?.line ?? 1 };
    else anchor = found.anchor;
  }
  const walk = new ChainWalk(from, new Set(checkpoints.map((c) => c.checkpoint.seq)), anchor);
  let walkProblem: { problem: ChainProblem; line: number } | undefined = anchorProblem;
  for (const { row, line } of anchorProblem ? [] : events) {
    if (formatProblem && formatProblem.line < line) break;
    const problem = walk.push(row);
    if (problem) {
      walkProblem = { problem, line };
      break;
    }
  }
  walkProblem ??= formatProblem;
  // The checkpoint last examined is the one a checkpoint problem is about.
  let examined: { line: number } | undefined;
  const { problem, checked, last } = walk.checkpoints(
    checkpoints.map((c) => c.checkpoint),
    walkProblem?.problem,
    (checkpoint) => {
      examined = checkpoints.find((c) => c.checkpoint === checkpoint)!;
      return refusal(checkpoint);
    },
  );
  const problemLine = problem === undefined ? undefined : problem === walkProblem?.problem ? walkProblem.line : examined?.line;
  return {
    org,
    verified: !problem,
    from,
    ...(pruned
      ? {
          pruned: {
            through: pruned.through,
            events: pruned.events,
            at: pruned.at,
            checkpoint: anchor
              ? { seq: pruned.through, digest: anchor, signedAt: checkpoints.find((c) => c.checkpoint.seq === pruned.through)!.checkpoint.signedAt }
              : null,
          },
        }
      : {}),
    events: walk.events,
    head: walk.head,
    unchained: 0,
    checkpoints: checked,
    lastCheckpoint: last,
    key: { kid, source: keyText === undefined ? 'export' : 'given' },
    ...(problem ? { problem, ...(problemLine ? { line: problemLine } : {}) } : {}),
  };
}

/** An export that cannot be read as one (not a verification problem of the chain). */
export class ExportFormatError extends Error {}

function parseLine<T>(text: string, number: number): T {
  try {
    const value: unknown = JSON.parse(text);
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as T;
  } catch {
    // below
  }
  throw new ExportFormatError(`line ${number} is not a JSON object`);
}

/** A public key from PEM (SubjectPublicKeyInfo), JWK or one-key JWK Set text. */
function publicKeyOf(text: string) {
  try {
    const trimmed = text.trim();
    if (trimmed.startsWith('{')) {
      // A JWK, or the JWK Set of GET /audit/v1/checkpoint-key (one key).
      const parsed = JSON.parse(trimmed) as { keys?: unknown[] } & Record<string, unknown>;
      const jwk = Array.isArray(parsed.keys) && parsed.keys.length === 1 ? parsed.keys[0] : parsed;
      return createPublicKey({ key: jwk as Record<string, string>, format: 'jwk' });
    }
    return createPublicKey(trimmed);
  } catch {
    throw new ExportFormatError('the key is neither a PEM public key nor a JWK');
  }
}
