import { Injectable } from '@nestjs/common';
import { Database, Transaction } from '@app/persistence';

/**
 * The organization's groups. Membership is the list of names on each user (`users.groups`, where
 * tokens and the Operator Dependent rule read it); this table gives every name an id and a version.
 */
@Injectable()
export class GroupRepository {
  constructor(private readonly db: Database) {}

  /** Makes sure each name has its row (a user was given it); existing rows are left as they are. */
  async ensure(orgId: string, names: readonly string[], now: Date, tx: Transaction): Promise<void> {
    if (names.length === 0) return;
    await this.db.query(
      `INSERT INTO user_groups (id, org_id, display_name, created_at, updated_at)
       SELECT gen_random_uuid(), $1, name, $3, $3 FROM unnest($2::text[]) AS name
       ON CONFLICT (org_id, display_name) DO NOTHING`,
      [orgId, names, now],
      tx,
    );
  }

  /** The id of each named group (one round trip for a page of users). */
  async idsByName(orgId: string, names: readonly string[]): Promise<Map<string, string>> {
    if (names.length === 0) return new Map();
    const rows = await this.db.query<{ id: string; display_name: string }>(
      'SELECT id, display_name FROM user_groups WHERE org_id = $1 AND display_name = ANY($2::text[])',
      [orgId, names],
    );
    return new Map(rows.map((row) => [row.display_name, row.id]));
  }
}
