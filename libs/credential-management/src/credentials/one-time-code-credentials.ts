import { Injectable } from '@nestjs/common';
import type { OneTimeCodeSource } from '@app/auth';
import { DataCipher, UnknownKeyError, UnreadableValueError } from '@app/common';
import { Database } from '@app/persistence';
import { base32Decode, matchingStep } from './totp';

interface TotpRow {
  id: string;
  oath_key_id: string;
  oath_secret: Buffer;
  oath_digits: number;
  oath_period: number;
  oath_last_step: string | null;
}

/** A person's ISSUED OATH TOTP credentials: on a device, in the wallet the person owns. */
const OWNED_TOTP = `FROM credentials c JOIN wallets w ON w.id = c.wallet_id
   WHERE c.org_id = $1 AND w.owner_user_id = $2 AND c.type = 'OATH_TOTP' AND c.status = 'ISSUED'`;

/**
 * The hosted login page's one-time codes (libs/auth OneTimeCodes; DECISIONS 14.1): the OATH TOTP
 * credential SyncSession issued, its secret opened only here, in memory, for the check. A code is
 * accepted once across instances: the accepted time step is written with
 * `UPDATE ... WHERE oath_last_step < step`, so of two concurrent uses of one code exactly one
 * updates the row, and a code of that step or an earlier one never matches again.
 */
@Injectable()
export class OneTimeCodeCredentials implements OneTimeCodeSource {
  constructor(
    private readonly db: Database,
    private readonly cipher: DataCipher,
  ) {}

  async holds(orgId: string, userId: string): Promise<boolean> {
    const [row] = await this.db.query<{ holds: boolean }>(`SELECT EXISTS (SELECT 1 ${OWNED_TOTP}) AS holds`, [orgId, userId]);
    return row.holds;
  }

  async accept(orgId: string, userId: string, code: string, at: Date): Promise<boolean> {
    const rows = await this.db.query<TotpRow>(
      `SELECT c.id, c.oath_key_id, c.oath_secret, c.oath_digits, c.oath_period, c.oath_last_step ${OWNED_TOTP} ORDER BY c.created_at, c.id`,
      [orgId, userId],
    );
    for (const row of rows) {
      const secret = this.secretOf(row);
      if (!secret) continue;
      const step = matchingStep(secret, code, at, row.oath_period, row.oath_digits, row.oath_last_step === null ? null : Number(row.oath_last_step));
      if (step === undefined) continue;
      const [won] = await this.db.query<{ id: string }>(
        `UPDATE credentials SET oath_last_step = $2, last_used_at = $3
          WHERE id = $1 AND status = 'ISSUED' AND (oath_last_step IS NULL OR oath_last_step < $2)
          RETURNING id`,
        [row.id, step, at],
      );
      return won !== undefined;
    }
    return false;
  }

  /** The credential's OATH secret; undefined when it cannot be opened (its key left DATA_ENCRYPTION_KEYS): that credential matches no code. */
  private secretOf(row: TotpRow): Buffer | undefined {
    try {
      return base32Decode(this.cipher.open({ keyId: row.oath_key_id, sealed: row.oath_secret }, `credential:${row.id}`));
    } catch (error) {
      if (error instanceof UnknownKeyError || error instanceof UnreadableValueError) return undefined;
      throw error;
    }
  }
}
