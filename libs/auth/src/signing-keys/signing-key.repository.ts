import { Injectable } from '@nestjs/common';
import type { JwsAlgorithm, SigningJwk } from '@app/hsm';
import { Database, Transaction } from '@app/persistence';

export type SigningKeyState = 'next' | 'active' | 'retired';

export interface SigningKeyRow {
  kid: string;
  hsm_label: string;
  /** CKA_ID, hex; null for JWT_KEY, which the HSM module finds by its label alone. */
  hsm_key_id: string | null;
  algorithm: JwsAlgorithm;
  public_jwk: SigningJwk;
  state: SigningKeyState;
  created_at: Date;
  /** A next key: when it is to be activated (scheduled by the administrator), or null. */
  activate_at: Date | null;
  activated_at: Date | null;
  retired_at: Date | null;
  /** Retired keys: published in JWKS until then (the last token the key signed has expired, or it was withdrawn). */
  not_after: Date | null;
  /**
   * The latest expiry a token this key signs may have: the token path reserves it ahead of the
   * tokens (SigningKeys.signingKeyFor), and a token row is inserted only while it covers the token.
   */
  last_token_expires_at: Date | null;
  /** An emergency withdrawal (a key believed compromised): when, and the administrator's reason. */
  withdrawn_at: Date | null;
  withdraw_reason: string | null;
}

/** libs/auth's table of token-signing keys (DECISIONS 12.1). Every state move is one guarded UPDATE. */
@Injectable()
export class SigningKeyRepository {
  constructor(private readonly db: Database) {}

  async all(tx?: Transaction): Promise<SigningKeyRow[]> {
    return this.db.query<SigningKeyRow>('SELECT * FROM signing_keys ORDER BY created_at, kid', [], tx);
  }

  async find(kid: string, tx?: Transaction): Promise<SigningKeyRow | undefined> {
    const [row] = await this.db.query<SigningKeyRow>('SELECT * FROM signing_keys WHERE kid = $1', [kid], tx);
    return row;
  }

  /**
   * JWT_KEY as the active key, unless the table knows it or has an active key already (the primary
   * key and the one-active index decide, so two instances starting at once insert it once). True
   * when this call inserted it.
   */
  async registerFirst(row: Pick<SigningKeyRow, 'kid' | 'hsm_label' | 'algorithm' | 'public_jwk' | 'created_at'>, tx: Transaction): Promise<boolean> {
    const inserted = await this.db.query(
      `INSERT INTO signing_keys (kid, hsm_label, algorithm, public_jwk, state, created_at, activated_at)
       VALUES ($1, $2, $3, $4, 'active', $5, $5) ON CONFLICT DO NOTHING RETURNING 1`,
      [row.kid, row.hsm_label, row.algorithm, row.public_jwk, row.created_at],
      tx,
    );
    return inserted.length > 0;
  }

  async insertNext(
    row: Pick<SigningKeyRow, 'kid' | 'hsm_label' | 'hsm_key_id' | 'algorithm' | 'public_jwk' | 'created_at'>,
    tx: Transaction,
  ): Promise<SigningKeyRow> {
    const [inserted] = await this.db.query<SigningKeyRow>(
      `INSERT INTO signing_keys (kid, hsm_label, hsm_key_id, algorithm, public_jwk, state, created_at)
       VALUES ($1, $2, $3, $4, $5, 'next', $6) RETURNING *`,
      [row.kid, row.hsm_label, row.hsm_key_id, row.algorithm, row.public_jwk, row.created_at],
      tx,
    );
    return inserted;
  }

  /**
   * Retires the active key unless it is `kid`: published until its last token expires, plus `skewS`
   * (never before `at`). The UPDATE waits for a reservation in progress and reads the row as it
   * committed, so every token row the key may still get is covered. Its row, or undefined when
   * there was none to retire.
   */
  async retireActive(kid: string, at: Date, skewS: number, tx: Transaction): Promise<SigningKeyRow | undefined> {
    const [row] = await this.db.query<SigningKeyRow>(
      `UPDATE signing_keys SET state = 'retired', retired_at = $2, not_after = GREATEST($2::timestamptz, last_token_expires_at + make_interval(secs => $3))
        WHERE state = 'active' AND kid <> $1 RETURNING *`,
      [kid, at, skewS],
      tx,
    );
    return row;
  }

  /**
   * Lets the active key `kid` sign tokens expiring up to `until` (never lowering what another
   * instance reserved); what the key now covers, or undefined when it is no longer active.
   */
  async reserve(kid: string, until: Date): Promise<Date | undefined> {
    const [row] = await this.db.query<{ last_token_expires_at: Date }>(
      `UPDATE signing_keys SET last_token_expires_at = GREATEST(last_token_expires_at, $2)
        WHERE kid = $1 AND state = 'active' RETURNING last_token_expires_at`,
      [kid, until],
    );
    return row?.last_token_expires_at;
  }

  /**
   * The emergency withdrawal of the active key `kid`: out of JWKS now, and `replacement` active in
   * its place, in one transaction (the one-active index refuses a concurrent activation). The
   * withdrawn row, or undefined when `kid` is not the active key.
   */
  async withdrawActive(
    kid: string,
    replacement: Pick<SigningKeyRow, 'kid' | 'hsm_label' | 'hsm_key_id' | 'algorithm' | 'public_jwk'>,
    at: Date,
    reason: string,
    tx: Transaction,
  ): Promise<{ withdrawn: SigningKeyRow; activated: SigningKeyRow } | undefined> {
    const [withdrawn] = await this.db.query<SigningKeyRow>(
      `UPDATE signing_keys SET state = 'retired', retired_at = $2, not_after = $2, withdrawn_at = $2, withdraw_reason = $3
        WHERE kid = $1 AND state = 'active' RETURNING *`,
      [kid, at, reason],
      tx,
    );
    if (withdrawn === undefined) return undefined;
    const [activated] = await this.db.query<SigningKeyRow>(
      `INSERT INTO signing_keys (kid, hsm_label, hsm_key_id, algorithm, public_jwk, state, created_at, activated_at)
       VALUES ($1, $2, $3, $4, $5, 'active', $6, $6) RETURNING *`,
      [replacement.kid, replacement.hsm_label, replacement.hsm_key_id, replacement.algorithm, replacement.public_jwk, at],
      tx,
    );
    return { withdrawn, activated };
  }

  /**
   * The emergency withdrawal of a next or retired key `kid` not withdrawn yet: out of JWKS now (a
   * retired key's tokens are refused from now on). Undefined when `kid` is no such key.
   */
  async withdrawInactive(kid: string, at: Date, reason: string, tx: Transaction): Promise<SigningKeyRow | undefined> {
    const [row] = await this.db.query<SigningKeyRow>(
      `UPDATE signing_keys
          SET state = 'retired', retired_at = COALESCE(retired_at, $2), not_after = LEAST(COALESCE(not_after, $2), $2), activate_at = NULL,
              withdrawn_at = $2, withdraw_reason = $3
        WHERE kid = $1 AND state <> 'active' AND withdrawn_at IS NULL RETURNING *`,
      [kid, at, reason],
      tx,
    );
    return row;
  }

  /**
   * Activates a next key published at `publishedBefore` or earlier (and, with `due`, scheduled for
   * no later than `at`); undefined when the row is not such a key.
   */
  async activate(kid: string, at: Date, publishedBefore: Date, due: boolean, tx: Transaction): Promise<SigningKeyRow | undefined> {
    const [row] = await this.db.query<SigningKeyRow>(
      `UPDATE signing_keys SET state = 'active', activated_at = $2, activate_at = NULL
        WHERE kid = $1 AND state = 'next' AND created_at <= $3 AND (NOT $4 OR activate_at <= $2) RETURNING *`,
      [kid, at, publishedBefore, due],
      tx,
    );
    return row;
  }

  /** Schedules the activation of a next key published at `publishedBefore` or earlier; undefined when the row is not such a key. */
  async schedule(kid: string, at: Date, publishedBefore: Date, tx: Transaction): Promise<SigningKeyRow | undefined> {
    const [row] = await this.db.query<SigningKeyRow>(
      `UPDATE signing_keys SET activate_at = $2 WHERE kid = $1 AND state = 'next' AND created_at <= $3 RETURNING *`,
      [kid, at, publishedBefore],
      tx,
    );
    return row;
  }

  /** Withdraws a next key (it signed nothing, so it leaves JWKS at once); undefined when `kid` is no next key. */
  async withdraw(kid: string, at: Date, tx: Transaction): Promise<SigningKeyRow | undefined> {
    const [row] = await this.db.query<SigningKeyRow>(
      `UPDATE signing_keys SET state = 'retired', retired_at = $2, not_after = $2, activate_at = NULL WHERE kid = $1 AND state = 'next' RETURNING *`,
      [kid, at],
      tx,
    );
    return row;
  }

  /** Deletes a retired key no longer published or withdrawn (and not JWT_KEY); undefined when `kid` is no such key. */
  async deleteUnpublished(kid: string, now: Date, jwtKeyLabel: string, tx: Transaction): Promise<SigningKeyRow | undefined> {
    const [row] = await this.db.query<SigningKeyRow>(
      `DELETE FROM signing_keys WHERE kid = $1 AND state = 'retired' AND (not_after <= $2 OR withdrawn_at IS NOT NULL) AND hsm_label <> $3 RETURNING *`,
      [kid, now, jwtKeyLabel],
      tx,
    );
    return row;
  }
}
