import { Inject, Injectable, Optional } from '@nestjs/common';
import { KeyObject, createPublicKey } from 'node:crypto';
import { Clock, isoTimestamp } from '@app/common';
import { AppConfig } from '@app/config';
import { HsmKeyPair, KeyStore, KeyStoreError, SigningJwk, signingJwkFromSpki } from '@app/hsm';
import { LOGGER, Logger } from '@app/observability';
import { Database, Transaction } from '@app/persistence';
import { Checkpoint, checkpointMessage } from './audit-chain';

/** A checkpoint as stored: the signed head, the key's RFC 7638 thumbprint and the ES256 signature (raw r||s, base64url). */
export interface StoredCheckpoint extends Checkpoint {
  keyId: string;
  signature: string;
}

/**
 * Signs chain heads with the platform's audit key in the HSM (DECISIONS 11.2): a chain's head is
 * signed once it is AUDIT_CHECKPOINT_EVENTS events past its last checkpoint, or AUDIT_CHECKPOINT_INTERVAL_S
 * after it, whichever comes first. The key (EC P-256, label AUDIT_KEY_LABEL) is made in the token the
 * first time it is needed, and its public key is published at GET /audit/v1/checkpoint-key.
 * Without an HSM (the command line) nothing is signed and nothing can be checked.
 */
@Injectable()
export class AuditCheckpoints {
  private pair?: Promise<HsmKeyPair>;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    @Optional() private readonly keys?: KeyStore,
  ) {}

  get available(): boolean {
    return this.keys !== undefined;
  }

  /** The audit key, made in the HSM when there is none yet (another instance making it at the same moment wins). */
  private keyPair(): Promise<HsmKeyPair> {
    if (!this.keys) throw new Error('audit checkpoints need the HSM');
    const keys = this.keys;
    const label = this.config.auditChain.keyLabel;
    this.pair ??= (async () => {
      const found = await keys.findKeyPair(label);
      if (found) return found;
      try {
        const made = await keys.generateKeyPair(label, 'EC-P256');
        this.logger.info({ label }, 'generated the audit checkpoint key in the HSM');
        return made;
      } catch (error) {
        if (error instanceof KeyStoreError && error.code === 'KEY_LABEL_TAKEN') return (await keys.findKeyPair(label))!;
        throw error;
      }
    })().catch((error: unknown) => {
      this.pair = undefined;
      throw error;
    });
    return this.pair;
  }

  /** The public half of the audit key, as a JWK whose `kid` every checkpoint names. */
  async publicJwk(): Promise<SigningJwk> {
    return signingJwkFromSpki((await this.keyPair()).publicKeySpki);
  }

  /** Signs every chain head that is due; the number signed, or undefined when another instance holds the pass. */
  async checkpointOnce(): Promise<number | undefined> {
    if (!this.keys) return 0;
    const keys = this.keys;
    const { checkpointEvents, checkpointIntervalS } = this.config.auditChain;
    return this.db.transaction(async (tx) => {
      const [lock] = await this.db.query<{ locked: boolean }>("SELECT pg_try_advisory_xact_lock(hashtextextended('audit-chain', 0)) AS locked", [], tx);
      if (!lock.locked) return undefined;
      const now = this.clock.now();
      const due = await this.db.query<{ org_id: string | null; chain_seq: string; digest: string }>(
        `SELECT org_id, chain_seq::text AS chain_seq, digest FROM audit_chain_heads
          WHERE chain_seq > checkpoint_seq AND (chain_seq - checkpoint_seq >= $1 OR checkpoint_at <= $2::timestamptz - make_interval(secs => $3::int))`,
        [checkpointEvents, now, checkpointIntervalS],
        tx,
      );
      // The HSM is touched only when a head is due: a pass every second must not reach a module that
      // may be failing slowly (finding and holding the key checks the pair with a sign), and most
      // passes sign nothing.
      if (due.length === 0) return 0;
      const pair = await this.keyPair();
      const jwk = signingJwkFromSpki(pair.publicKeySpki);
      for (const head of due) {
        const checkpoint: Checkpoint = { org: head.org_id, seq: Number(head.chain_seq), digest: head.digest, signedAt: isoTimestamp(now) };
        const signature = await keys.sign(pair.label, checkpointMessage(checkpoint), { hash: 'SHA-256', encoding: 'raw' });
        await this.db.query(
          'INSERT INTO audit_checkpoints (org_id, chain_seq, digest, signed_at, key_id, signature) VALUES ($1, $2, $3, $4, $5, $6)',
          [head.org_id, checkpoint.seq, checkpoint.digest, now, jwk.kid, signature.toString('base64url')],
          tx,
        );
        await this.db.query(
          'UPDATE audit_chain_heads SET checkpoint_seq = $2, checkpoint_at = $3 WHERE org_id IS NOT DISTINCT FROM $1',
          [head.org_id, checkpoint.seq, now],
          tx,
        );
      }
      return due.length;
    });
  }

  /** A chain's checkpoints, oldest first. */
  async list(org: string | null, tx?: Transaction): Promise<StoredCheckpoint[]> {
    const rows = await this.db.query<{ chain_seq: string; digest: string; signed_at: Date; key_id: string; signature: string }>(
      `SELECT chain_seq::text AS chain_seq, digest, signed_at, key_id, signature FROM audit_checkpoints
        WHERE ${org === null ? 'org_id IS NULL' : 'org_id = $1'} ORDER BY audit_checkpoints.chain_seq`,
      org === null ? [] : [org],
      tx,
    );
    return rows.map((row) => ({
      org,
      seq: Number(row.chain_seq),
      digest: row.digest,
      signedAt: isoTimestamp(row.signed_at),
      keyId: row.key_id,
      signature: row.signature,
    }));
  }

  /** The audit key's public half and its RFC 7638 thumbprint, to check checkpoints with (`checkpointRefusal`). */
  async verificationKey(): Promise<{ key: KeyObject; kid: string }> {
    const spki = (await this.keyPair()).publicKeySpki;
    return { key: createPublicKey({ key: spki, format: 'der', type: 'spki' }), kid: signingJwkFromSpki(spki).kid };
  }
}
