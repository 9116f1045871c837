import { Injectable } from '@nestjs/common';
import type { TokenSubject } from '@app/accounts';
import { Database, Transaction } from '@app/persistence';

/** The token store's side of account changes (libs/auth owns access_tokens). */
@Injectable()
export class SubjectTokens {
  constructor(private readonly db: Database) {}

  /** Revokes every live token of the system account or user; answers how many. */
  async revokeAll(subject: TokenSubject, at: Date, tx: Transaction): Promise<number> {
    const [column, id] = 'accountId' in subject ? ['account_id', subject.accountId] : ['user_id', subject.userId];
    const [row] = await this.db.query<{ n: string }>(
      `WITH revoked AS (UPDATE access_tokens SET revoked_at = $2 WHERE ${column} = $1 AND revoked_at IS NULL RETURNING 1) SELECT count(*) AS n FROM revoked`,
      [id, at],
      tx,
    );
    return Number(row.n);
  }

  /** Tokens cascade from their account or user; this also covers a token whose subject row is already gone. */
  async forgetOrganization(orgId: string, tx: Transaction): Promise<void> {
    await this.db.query('DELETE FROM access_tokens WHERE org_id = $1', [orgId], tx);
  }
}
