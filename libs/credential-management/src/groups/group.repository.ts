import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { ScimSearch, SqlParameters, searchSql } from '@app/common';
import { Database, Transaction } from '@app/persistence';
import { refusedWrite } from '../common/store-errors';
import { GROUP_SEARCH_DEFINITION } from './group.schema';

export interface GroupRow {
  id: string;
  org_id: string;
  display_name: string;
  created_at: Date;
  updated_at: Date;
  version: number;
}

const COLUMNS = 'g.id, g.org_id, g.display_name, g.created_at, g.updated_at, g.version';

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

  async create(orgId: string, displayName: string, now: Date, tx: Transaction): Promise<GroupRow> {
    return refusedWrite(orgId, `A group named "${displayName}" already exists in this organization.`, async () => {
      const [row] = await this.db.query<GroupRow>(
        `INSERT INTO user_groups AS g (id, org_id, display_name, created_at, updated_at) VALUES ($1, $2, $3, $4, $4) RETURNING ${COLUMNS}`,
        [randomUUID(), orgId, displayName, now],
        tx,
      );
      return row;
    });
  }

  async find(orgId: string, id: string, tx?: Transaction, lock = false): Promise<GroupRow | undefined> {
    const [row] = await this.db.query<GroupRow>(
      `SELECT ${COLUMNS} FROM user_groups g WHERE g.org_id = $1 AND g.id = $2${lock ? ' FOR UPDATE' : ''}`,
      [orgId, id],
      tx,
    );
    return row;
  }

  /** A page of groups; `names` limits an Operator Dependent caller to its own groups. */
  async search(orgId: string, search: ScimSearch, names: readonly string[] | undefined): Promise<{ rows: GroupRow[]; total: number }> {
    const params = new SqlParameters([orgId]);
    const scope = names === undefined ? 'TRUE' : `g.display_name = ANY(${params.add(names)}::text[])`;
    const sql = searchSql(search, GROUP_SEARCH_DEFINITION, params);
    const from = `FROM user_groups g WHERE g.org_id = $1 AND ${scope} AND ${sql.where}`;
    return this.db.searchPage<GroupRow>(COLUMNS, from, { ...sql, ...search.page }, params.values);
  }

  /** A new name and/or a new version (a member change bumps it too). */
  async touch(orgId: string, id: string, displayName: string | undefined, now: Date, tx: Transaction): Promise<GroupRow> {
    return refusedWrite(orgId, `A group named "${displayName ?? ''}" already exists in this organization.`, async () => {
      const [row] = await this.db.query<GroupRow>(
        `UPDATE user_groups AS g SET display_name = COALESCE($3, display_name), updated_at = $4, version = version + 1
          WHERE g.org_id = $1 AND g.id = $2 RETURNING ${COLUMNS}`,
        [orgId, id, displayName ?? null, now],
        tx,
      );
      return row;
    });
  }

  async delete(orgId: string, id: string, tx: Transaction): Promise<void> {
    await this.db.query('DELETE FROM user_groups WHERE org_id = $1 AND id = $2', [orgId, id], tx);
  }
}
