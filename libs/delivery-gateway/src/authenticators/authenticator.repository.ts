import { Injectable } from '@nestjs/common';
import { Database, Transaction } from '@app/persistence';
import { AuthenticatorJwk } from './authenticator-key';

/** An authenticator as every read shows it: without its push handle, which only the sender reads. */
export interface AuthenticatorRow {
  id: string;
  org_id: string;
  user_id: string;
  display_name: string;
  operating_system: string;
  public_key: AuthenticatorJwk;
  thumbprint: string;
  /** When a hub called its push handle gone (DECISIONS 10.3); null while it is live. */
  stale_since: Date | null;
  created_at: Date;
  updated_at: Date;
  version: number;
}

export interface NewAuthenticator {
  id: string;
  orgId: string;
  userId: string;
  displayName: string;
  operatingSystem: string;
  pushHandle: string;
  publicKey: AuthenticatorJwk;
  thumbprint: string;
  now: Date;
}

const COLUMNS = 'id, org_id, user_id, display_name, operating_system, public_key, thumbprint, stale_since, created_at, updated_at, version';
/** Live challenges one person may hold: enough for a few apps registered at once, bounded against a flood. */
const MAX_LIVE_CHALLENGES = 10;

/** SQL of authenticators and their registration challenges, scoped to one organization and person (DECISIONS 2). */
@Injectable()
export class AuthenticatorRepository {
  constructor(private readonly db: Database) {}

  /**
   * Stores a challenge; in the same statement, expired challenges are purged and the person's
   * oldest live ones beyond the bound dropped, so the table holds only what can still be used.
   */
  async addChallenge(orgId: string, userId: string, challenge: string, now: Date, expiresAt: Date): Promise<void> {
    await this.db.query(
      `WITH expired AS (DELETE FROM authenticator_challenges WHERE expires_at <= $4),
            crowded AS (
              DELETE FROM authenticator_challenges WHERE user_id = $2 AND challenge IN (
                SELECT challenge FROM authenticator_challenges WHERE user_id = $2 AND expires_at > $4 ORDER BY created_at DESC OFFSET $6))
       INSERT INTO authenticator_challenges (org_id, user_id, challenge, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`,
      [orgId, userId, challenge, now, expiresAt, MAX_LIVE_CHALLENGES - 1],
    );
  }

  /** Takes a challenge of this person out, once across every instance: its expiry, or undefined when it is not (or no longer) there. */
  async consumeChallenge(orgId: string, userId: string, challenge: string): Promise<Date | undefined> {
    const [row] = await this.db.query<{ expires_at: Date }>(
      'DELETE FROM authenticator_challenges WHERE org_id = $1 AND user_id = $2 AND challenge = $3 RETURNING expires_at',
      [orgId, userId, challenge],
    );
    return row?.expires_at;
  }

  async insert(row: NewAuthenticator, tx: Transaction): Promise<AuthenticatorRow> {
    const [created] = await this.db.query<AuthenticatorRow>(
      `INSERT INTO authenticators (id, org_id, user_id, display_name, operating_system, push_handle, public_key, thumbprint, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING ${COLUMNS}`,
      [row.id, row.orgId, row.userId, row.displayName, row.operatingSystem, row.pushHandle, JSON.stringify(row.publicKey), row.thumbprint, row.now],
      tx,
    );
    return created;
  }

  listOf(orgId: string, userId: string): Promise<AuthenticatorRow[]> {
    return this.db.query<AuthenticatorRow>(`SELECT ${COLUMNS} FROM authenticators WHERE org_id = $1 AND user_id = $2 ORDER BY created_at, id`, [orgId, userId]);
  }

  async find(orgId: string, userId: string, id: string): Promise<AuthenticatorRow | undefined> {
    const [row] = await this.db.query<AuthenticatorRow>(`SELECT ${COLUMNS} FROM authenticators WHERE org_id = $1 AND user_id = $2 AND id = $3`, [
      orgId,
      userId,
      id,
    ]);
    return row;
  }

  /** An authenticator of the organization, whoever holds it: how an approval finds the key that signed it (DECISIONS 16). */
  async findInOrg(orgId: string, id: string): Promise<AuthenticatorRow | undefined> {
    const [row] = await this.db.query<AuthenticatorRow>(`SELECT ${COLUMNS} FROM authenticators WHERE org_id = $1 AND id = $2`, [orgId, id]);
    return row;
  }

  /** Renames; the answer's version less one is the version the rename applied to (If-Match). */
  async rename(orgId: string, userId: string, id: string, displayName: string, now: Date, tx: Transaction): Promise<AuthenticatorRow | undefined> {
    const [row] = await this.db.query<AuthenticatorRow>(
      `UPDATE authenticators SET display_name = $4, updated_at = $5, version = version + 1
        WHERE org_id = $1 AND user_id = $2 AND id = $3 RETURNING ${COLUMNS}`,
      [orgId, userId, id, displayName, now],
      tx,
    );
    return row;
  }

  async remove(orgId: string, userId: string, id: string, tx: Transaction): Promise<AuthenticatorRow | undefined> {
    const [row] = await this.db.query<AuthenticatorRow>(
      `DELETE FROM authenticators WHERE org_id = $1 AND user_id = $2 AND id = $3 RETURNING ${COLUMNS}`,
      [orgId, userId, id],
      tx,
    );
    return row;
  }

  /** Removes every authenticator and challenge of the person, in the caller's transaction; answers the authenticators removed. */
  removeAllOf(orgId: string, userId: string, tx: Transaction): Promise<AuthenticatorRow[]> {
    return this.db.query<AuthenticatorRow>(
      `WITH challenges AS (DELETE FROM authenticator_challenges WHERE org_id = $1 AND user_id = $2)
       DELETE FROM authenticators WHERE org_id = $1 AND user_id = $2 RETURNING ${COLUMNS}`,
      [orgId, userId],
      tx,
    );
  }
}
