import { CANONICAL_PREFIX, isoTimestamp } from '@app/common';
import { CMS_GROUP_SCHEMA, SCIM_CORE_GROUP_SCHEMA } from './group.schema';
import { GroupView } from './group.service';

/** The Group resource (RFC 7643 4.2), on the SCIM routes and the admin API alike. */
export class GroupPresenter {
  constructor(private readonly baseUrl: string) {}

  group({ row, members }: GroupView) {
    return {
      schemas: [SCIM_CORE_GROUP_SCHEMA, CMS_GROUP_SCHEMA],
      id: row.id,
      displayName: row.display_name,
      members: members.map((member) => ({
        value: member.id,
        display: member.userName,
        $ref: `${this.baseUrl}${CANONICAL_PREFIX}/Users/${member.id}`,
        type: 'User',
      })),
      meta: {
        resourceType: 'Group',
        created: isoTimestamp(row.created_at),
        lastModified: isoTimestamp(row.updated_at),
        location: `${this.baseUrl}${CANONICAL_PREFIX}/Groups/${row.id}`,
        version: String(row.version),
      },
    };
  }
}
