import { ScimResourceDefinition, z, metaAttribute, UUID_PATTERN } from '@app/common';

export const SCIM_CORE_GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const CMS_GROUP_SCHEMA = 'urn:vendor:scim:api:cms:1.0:Group';

const displayName = z.string({ message: 'must be a string' }).trim().min(1, 'must not be empty').max(128, 'must be at most 128 characters');
const members = z
  .array(z.string({ message: 'must be a user id' }).regex(UUID_PATTERN, 'must be the id of a user (a UUID)'), { message: 'must be an array of user ids' })
  .max(10_000, 'must list at most 10000 users; add more with further PATCHes')
  .refine((list) => new Set(list.map((id) => id.toLowerCase())).size === list.length, 'must not list a user twice');

/** POST .../groups (CREDENTIAL-MANAGEMENT.md "Reference data"): `{displayName, members: [userId]}`. */
export const createGroupSchema = z.object({ displayName, members: members.optional() }).strict();
/** PATCH .../groups/{id}: a new name (members keep it), and/or the whole member list. */
export const patchGroupSchema = z.object({ displayName: displayName.optional(), members: members.optional() }).strict();

/** What GET /Groups may filter and sort on; `g` is the user_groups row. Members are returned, not filtered. */
export const GROUP_SEARCH_DEFINITION: ScimResourceDefinition = {
  schema: SCIM_CORE_GROUP_SCHEMA,
  uniqueOrder: 'g.id',
  defaultOrder: 'g.display_name',
  attributes: {
    id: { type: 'string', column: 'g.id::text', returned: 'always' },
    displayName: { type: 'string', column: 'g.display_name', caseExact: true },
    members: { type: 'complex', subAttributes: { value: { type: 'string' }, display: { type: 'string' }, $ref: { type: 'string' }, type: { type: 'string' } } },
    meta: metaAttribute('g'),
  },
};
