import { Injectable } from '@nestjs/common';
import { Database, prepared } from '@app/persistence';

const FIND = prepared(
  'user_links_find',
  `SELECT 'wallet' AS kind, owner_user_id::text AS key, id::text AS id FROM wallets WHERE org_id = $1 AND owner_user_id = ANY($2::uuid[])
   UNION ALL
   SELECT 'group', display_name, id::text FROM user_groups WHERE org_id = $1 AND display_name = ANY($3::text[])`,
);

/**
 * What a page of users needs from this library to be presented, in one round trip: each user's
 * wallet id and the id of each group name they carry (wallets and user_groups are this library's).
 */
@Injectable()
export class UserLinksRepository {
  constructor(private readonly db: Database) {}

  async find(
    orgId: string,
    userIds: readonly string[],
    groupNames: readonly string[],
  ): Promise<{ walletIds: Map<string, string>; groupIds: Map<string, string> }> {
    const walletIds = new Map<string, string>();
    const groupIds = new Map<string, string>();
    if (userIds.length === 0) return { walletIds, groupIds };
    const rows = await this.db.query<{ kind: 'wallet' | 'group'; key: string; id: string }>(FIND, [orgId, userIds, groupNames]);
    for (const row of rows) (row.kind === 'wallet' ? walletIds : groupIds).set(row.key, row.id);
    return { walletIds, groupIds };
  }
}
