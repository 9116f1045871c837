import { Injectable } from '@nestjs/common';
import type { UserRow, UserSearchColumns } from '@app/accounts';
import { Database, prepared } from '@app/persistence';
import type { UserLinks } from './user.presenter';

const FIND = prepared(
  'user_links_find',
  `SELECT 'wallet' AS kind, owner_user_id::text AS key, id::text AS id FROM wallets WHERE org_id = $1 AND owner_user_id = ANY($2::uuid[])
   UNION ALL
   SELECT 'group', display_name, id::text FROM user_groups WHERE org_id = $1 AND display_name = ANY($3::text[])`,
);

/**
 * The same links selected in a users search's own statement (accounts' UserSearchColumns, over the
 * search's row `u`): a page of users is one round trip, not two.
 */
export const USER_LINK_COLUMNS: UserSearchColumns = {
  sql: `(SELECT w.id::text FROM wallets w WHERE w.org_id = u.org_id AND w.owner_user_id = u.id) AS link_wallet_id,
    (SELECT jsonb_object_agg(g.display_name, g.id::text) FROM user_groups g WHERE g.org_id = u.org_id AND g.display_name = ANY(u.groups)) AS link_group_ids`,
};

/** What USER_LINK_COLUMNS adds to a row. */
export interface UserLinkColumns {
  link_wallet_id: string | null;
  link_group_ids: Record<string, string> | null;
}

/** A searched row split into the user and its links. */
export function linkedRow({ link_wallet_id, link_group_ids, ...user }: UserRow & UserLinkColumns): { user: UserRow; links: UserLinks } {
  return { user, links: { walletId: link_wallet_id ?? undefined, groupIds: new Map(Object.entries(link_group_ids ?? {})) } };
}

/**
 * What users read one by one (GET /Users/{id}, the answers of POST, PUT and PATCH) need from this
 * library to be presented, in one round trip: each user's wallet id and the id of each group name
 * they carry (wallets and user_groups are this library's). Searches select the same through
 * USER_LINK_COLUMNS instead.
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
