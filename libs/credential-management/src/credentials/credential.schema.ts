import { ScimResourceDefinition, metaAttribute } from '@app/common';

export const CREDENTIAL_SCHEMA = 'urn:vendor:scim:api:cms:1.0:Credential';
export const CREDENTIAL_STATUSES = ['ISSUED', 'ON_HOLD', 'REVOKED'] as const;
export type CredentialStatus = (typeof CREDENTIAL_STATUSES)[number];

/** What a certificate credential shows of its certificate (CREDENTIAL-MANAGEMENT.md "Resources"). */
export interface CertificateSummary {
  serialNumber: string;
  subject: string;
  issuer: string;
  notBefore: string;
  notAfter: string;
  /** base64 DER */
  value: string;
}

/** The Credential resource's attributes (read-only; GET /Credential/{id} projects with attributes/excludedAttributes). */
export const CREDENTIAL_DEFINITION: ScimResourceDefinition = {
  schema: CREDENTIAL_SCHEMA,
  uniqueOrder: 'c.id',
  attributes: {
    id: { type: 'string', column: 'c.id::text', returned: 'always' },
    type: { type: 'string', column: 'c.type' },
    status: { type: 'string', column: 'c.status' },
    device: {
      type: 'complex',
      subAttributes: { value: { type: 'string', column: 'c.device_id::text' }, display: { type: 'string' }, $ref: { type: 'string' } },
    },
    wallet: {
      type: 'complex',
      subAttributes: { value: { type: 'string', column: 'c.wallet_id::text' }, display: { type: 'string' }, $ref: { type: 'string' } },
    },
    certificate: {
      type: 'complex',
      subAttributes: {
        serialNumber: { type: 'string' },
        subject: { type: 'string' },
        issuer: { type: 'string' },
        notBefore: { type: 'dateTime' },
        notAfter: { type: 'dateTime' },
        value: { type: 'string' },
      },
    },
    oath: { type: 'complex', subAttributes: { digits: { type: 'number' }, period: { type: 'number' } } },
    revocationReason: { type: 'string' },
    expiresAt: { type: 'dateTime', column: 'c.expires_at' },
    meta: metaAttribute('c'),
  },
};
