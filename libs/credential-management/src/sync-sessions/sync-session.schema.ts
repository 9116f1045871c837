import { z, UUID_PATTERN } from '@app/common';
import { CREDENTIAL_TYPES } from '../device-policies/device-policy.schema';

export const SYNC_SESSION_SCHEMA = 'urn:vendor:scim:api:cms:1.0:SyncSession';
/** A CSR is at most 16 KiB (CREDENTIAL-MANAGEMENT.md "PKI"); PEM of that is a little larger. */
const MAX_CSR_CHARACTERS = 24 * 1024;
const MAX_RESULTS = 20;

const result = z
  .object({
    operation: z.string({ message: 'must be a string' }).min(1, 'must not be empty').max(64, 'must be at most 64 characters'),
    status: z.enum(['SUCCESS', 'FAILURE'], { message: 'must be "SUCCESS" or "FAILURE"' }),
    credentialType: z.enum(CREDENTIAL_TYPES, { message: `must be one of ${CREDENTIAL_TYPES.join(', ')}` }).optional(),
    csr: z.string({ message: 'must be a string: the PKCS#10 request, PEM or base64 DER' }).max(MAX_CSR_CHARACTERS, 'must be at most 24 KiB').optional(),
    detail: z.string({ message: 'must be a string' }).max(1000, 'must be at most 1000 characters').optional(),
  })
  .strict();
export type SyncResult = z.infer<typeof result>;

/**
 * POST /SyncSession (CREDENTIAL-MANAGEMENT.md "SyncSession"): the request executed, the card it was
 * executed on, and what happened, operation by operation.
 */
export const syncSessionSchema = z
  .object({
    schemas: z
      .array(z.string(), {
        error: (issue) => (issue.input === undefined ? `is required and must contain "${SYNC_SESSION_SCHEMA}"` : 'must be an array of strings'),
      })
      .refine((schemas) => schemas.includes(SYNC_SESSION_SCHEMA), { message: `must contain "${SYNC_SESSION_SCHEMA}"` }),
    contentRequest: z.object(
      { value: z.string({ message: 'is required: the id of the content request' }).regex(UUID_PATTERN, 'must be the id of a content request (a UUID)') },
      { error: 'is required: {value: <content request id>}' },
    ),
    device: z
      .object(
        {
          ATR: z.string({ message: 'is required: the ATR of the card, hexadecimal' }).regex(/^[0-9A-Fa-f]{4,66}$/, 'must be hexadecimal, 2-33 bytes'),
          CUID: z.string({ message: 'is required: the CUID of the card, decimal digits' }).regex(/^[0-9]{1,64}$/, 'must be 1-64 decimal digits'),
        },
        { error: 'is required: {ATR, CUID} of the card the request was executed on' },
      )
      .strict(),
    results: z
      .array(result, { error: 'is required: [{operation, status, credentialType, csr, detail}]' })
      .min(1, 'must report at least one operation')
      .max(MAX_RESULTS, `must report at most ${MAX_RESULTS} operations`),
  })
  .strict();
export type SyncSessionInput = z.infer<typeof syncSessionSchema>;
