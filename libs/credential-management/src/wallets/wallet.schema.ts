import { ScimResourceDefinition, metaAttribute } from '@app/common';

export const WALLET_SCHEMA = 'urn:vendor:scim:api:cms:1.0:Wallet';
export const MAX_WALLET_NOTES = 4000;

/**
 * What `.search` may filter and sort on: `w` is the wallets row, `u` its owner (the reviewed join of
 * test/table-ownership.spec.ts). Devices and credentials are returned, not filtered.
 */
export const WALLET_SEARCH_DEFINITION: ScimResourceDefinition = {
  schema: WALLET_SCHEMA,
  uniqueOrder: 'w.id',
  defaultOrder: 'w.created_at',
  attributes: {
    id: { type: 'string', column: 'w.id::text', returned: 'always' },
    status: { type: 'string', column: 'w.status' },
    notes: { type: 'string', column: 'w.notes' },
    owner: {
      type: 'complex',
      subAttributes: {
        value: { type: 'string', column: 'w.owner_user_id::text' },
        display: { type: 'string', column: 'u.user_name' },
        $ref: { type: 'string' },
        type: { type: 'string' },
      },
    },
    devices: { type: 'complex', subAttributes: { value: { type: 'string' }, display: { type: 'string' }, $ref: { type: 'string' }, type: { type: 'string' } } },
    credentials: { type: 'complex', subAttributes: { value: { type: 'string' }, $ref: { type: 'string' }, type: { type: 'string' } } },
    meta: metaAttribute('w'),
  },
};
