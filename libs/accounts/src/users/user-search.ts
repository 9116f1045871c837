import { ScimResourceDefinition, metaAttribute } from '@app/common';

/** The SCIM core User schema (RFC 7643 4.1): what identity providers' filters are prefixed with. */
export const SCIM_CORE_USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';

/** Every e-mail address of a user in one lower-cased text, as its trigram index stores it. */
export const EMAIL_VALUES = `lower(jsonb_path_query_array(u.emails, '$[*].value')::text)`;

const text = (column: string, caseExact = false) => ({ type: 'string' as const, column, caseExact });

/**
 * What Users lists and `.search` may filter, sort and project (CREDENTIAL-MANAGEMENT.md "Users",
 * DECISIONS 9), mapped onto the users table: `u` is the row. Declared beside the table it reads, and
 * used by the SCIM Users resource of libs/credential-management through UserService.search.
 * Attributes without a column are returned and projectable but not filterable.
 */
export const USER_SEARCH_DEFINITION: ScimResourceDefinition = {
  schema: SCIM_CORE_USER_SCHEMA,
  uniqueOrder: 'u.id',
  defaultOrder: 'u.created_at',
  attributes: {
    id: { ...text('u.id::text'), returned: 'always' },
    externalId: text('u.external_id', true),
    // users_org_lower_user_name_prefix_idx (migration 1764650000000): the desk's search as one types.
    userName: { ...text('u.user_name'), prefixIndexed: true },
    name: {
      type: 'complex',
      subAttributes: {
        givenName: text(`(u.name->>'givenName')`),
        familyName: text(`(u.name->>'familyName')`),
        middleName: text(`(u.name->>'middleName')`),
        formatted: text(`(u.name->>'formatted')`),
      },
    },
    displayName: text('u.display_name'),
    title: text(`(u.profile->>'title')`),
    preferredLanguage: text(`(u.profile->>'preferredLanguage')`),
    locale: text(`(u.profile->>'locale')`),
    timezone: text(`(u.profile->>'timezone')`),
    nickName: text(`(u.profile->>'nickName')`),
    userType: text('u.user_type'),
    active: { type: 'boolean', column: '(NOT u.disabled)' },
    emails: {
      type: 'complex',
      multiValued: {
        exists: (condition) => `EXISTS (SELECT 1 FROM jsonb_array_elements(u.emails) AS em(v) WHERE ${condition})`,
        // users_lower_email_values_trgm_idx (migration 1764300000300).
        indexed: { value: EMAIL_VALUES },
      },
      subAttributes: {
        value: text(`(em.v->>'value')`),
        type: text(`(em.v->>'type')`),
        primary: { type: 'boolean', column: `(em.v->>'primary')::boolean` },
      },
    },
    phoneNumbers: {
      type: 'complex',
      multiValued: {
        exists: (condition) => `EXISTS (SELECT 1 FROM jsonb_array_elements(COALESCE(u.profile->'phoneNumbers', '[]'::jsonb)) AS ph(v) WHERE ${condition})`,
      },
      subAttributes: { value: text(`(ph.v->>'value')`), type: text(`(ph.v->>'type')`), primary: { type: 'boolean', column: `(ph.v->>'primary')::boolean` } },
    },
    addresses: {
      type: 'complex',
      multiValued: {
        exists: (condition) => `EXISTS (SELECT 1 FROM jsonb_array_elements(COALESCE(u.profile->'addresses', '[]'::jsonb)) AS ad(v) WHERE ${condition})`,
      },
      subAttributes: Object.fromEntries(
        ['formatted', 'streetAddress', 'locality', 'region', 'postalCode', 'country', 'type'].map((sub) => [sub, text(`(ad.v->>'${sub}')`)]),
      ),
    },
    groups: {
      type: 'complex',
      multiValued: { exists: (condition) => `EXISTS (SELECT 1 FROM unnest(u.groups) AS g(name) WHERE ${condition})` },
      // A group's id lives with the Groups resource; filter members by the group's name.
      subAttributes: { display: text('g.name', true), value: { type: 'string' }, $ref: { type: 'string' }, type: { type: 'string' } },
    },
    roles: {
      type: 'complex',
      multiValued: { exists: (condition) => `EXISTS (SELECT 1 FROM (VALUES (u.role)) AS ro(value) WHERE ${condition})` },
      subAttributes: { value: text('ro.value', true) },
    },
    x509Certificates: { type: 'complex', subAttributes: { value: { type: 'string' } } },
    wallet: { type: 'complex', subAttributes: { value: { type: 'string' }, display: { type: 'string' }, $ref: { type: 'string' }, type: { type: 'string' } } },
    meta: metaAttribute('u'),
  },
};
