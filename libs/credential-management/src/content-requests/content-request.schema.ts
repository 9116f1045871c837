import { ScimResourceDefinition, metaAttribute, z, UUID_PATTERN } from '@app/common';
import { CONTENT_REQUEST_TYPES } from './content-request-lifecycle';

export const CONTENT_REQUEST_SCHEMA = 'urn:vendor:scim:api:cms:1.0:ContentRequest';
export const CONTENT_REQUEST_REASONS = ['NONE', 'LOST', 'STOLEN', 'DAMAGED', 'FORGOTTEN', 'RENEW', 'EXPIRED'] as const;
export type ContentRequestReason = (typeof CONTENT_REQUEST_REASONS)[number];

const MAX_PARAMETERS = 50;

/**
 * A SCIM reference as a client sends it: `value` is what counts; anything else (display, $ref, type,
 * as an answer shows them) is ignored, not refused, so that a client can send back what it read.
 */
const reference = (what: string) =>
  z.object({
    value: z
      .string({ error: (issue) => (issue.input === undefined ? `is required: the id of the ${what}` : 'must be a string') })
      .regex(UUID_PATTERN, `must be the id of a ${what} (a UUID)`),
  });

/** Words that name a secret when a parameter's name ends in them (DECISIONS 9). */
const SECRET_WORDS = new Set(['pin', 'puk', 'password', 'passwd', 'passphrase', 'secret', 'key', 'seed', 'otp']);

/**
 * Whether a parameter's name says its value is a secret: its last word (words split at _ . : -,
 * digits and lower-to-upper case changes) is one of SECRET_WORDS, or is `code` after one of them
 * (`newPin`, `otpSeed`, `puk.code`; not `pin-letter` or `keyType`). Parameters are stored and shown
 * as given, so a PIN never belongs in them (DECISIONS 9).
 */
function namesSecret(id: string): boolean {
  const words = id
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .split(/[^A-Za-z]+/)
    .filter(Boolean)
    .map((word) => word.toLowerCase());
  const last = words.at(-1);
  return last !== undefined && (SECRET_WORDS.has(last) || (last === 'code' && words.length > 1 && SECRET_WORDS.has(words.at(-2)!)));
}

const parameter = z
  .object({
    id: z
      .string({ message: 'must be a string' })
      .regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'must be 1-64 characters of letters, digits, _ . : -')
      .refine((id) => !namesSecret(id), {
        error: (issue) =>
          `"${String(issue.input)}" names a secret (a PIN, PUK, password, passphrase, secret, key, seed or one-time password); parameters are stored and shown as given, so no secret belongs in them`,
      }),
    value: z.string({ message: 'must be a string' }).max(4096, 'must be at most 4096 characters'),
    type: z.string({ message: 'must be a string' }).max(64, 'must be at most 64 characters').optional(),
    encoding: z.string({ message: 'must be a string' }).max(32, 'must be at most 32 characters').optional(),
  })
  .strict();
const parameters = z
  .array(parameter, { message: 'must be an array of {id, value, type, encoding}' })
  .max(MAX_PARAMETERS, `must hold at most ${MAX_PARAMETERS} parameters`)
  .refine((list) => new Set(list.map((p) => p.id)).size === list.length, 'must not name a parameter id twice');
const reason = z.enum(CONTENT_REQUEST_REASONS, { message: `must be one of ${CONTENT_REQUEST_REASONS.join(', ')}` });
const expiresAt = z.iso.datetime({ offset: true, message: 'must be a date-time with a time zone, e.g. 2026-12-01T12:00:00Z' });

export type RequestParameter = z.infer<typeof parameter>;

/**
 * POST /ContentRequest (CREDENTIAL-MANAGEMENT.md "Resources"): `type` and `target.device` always;
 * `wallet` and `target.devicePolicy` as the type needs them (the service says which is missing);
 * `status`, `requestedBy`, `approvedBy` and `failure` are read-only and ignored.
 */
export const createContentRequestSchema = z
  .object({
    schemas: z
      .array(z.string(), {
        error: (issue) => (issue.input === undefined ? `is required and must contain "${CONTENT_REQUEST_SCHEMA}"` : 'must be an array of strings'),
      })
      .refine((schemas) => schemas.includes(CONTENT_REQUEST_SCHEMA), { message: `must contain "${CONTENT_REQUEST_SCHEMA}"` }),
    type: z.enum(CONTENT_REQUEST_TYPES, {
      error: (issue) => `${issue.input === undefined ? 'is required: ' : 'must be '}one of ${CONTENT_REQUEST_TYPES.map((t) => `"${t}"`).join(', ')}`,
    }),
    target: z
      .object(
        { device: reference('device'), devicePolicy: reference('device policy').optional() },
        { error: 'is required: {device: {value}, devicePolicy: {value}}' },
      )
      .strict(),
    wallet: reference('wallet').optional(),
    reason: reason.optional(),
    parameters: parameters.optional(),
    expiresAt: expiresAt.optional(),
    status: z.unknown().optional(),
    requestedBy: z.unknown().optional(),
    approvedBy: z.unknown().optional(),
    failure: z.unknown().optional(),
  })
  .strict();
export type NewContentRequest = z.infer<typeof createContentRequestSchema>;

/** What PATCH may change, as a PatchOp applies it to the request's current view. */
export const patchedContentRequestSchema = z.object({ reason, parameters, expiresAt }).strict();

/** The body of an action (approve, deny, cancel, retry): nothing but an optional `schemas`. */
export const actionSchema = z.object({ schemas: z.array(z.string()).optional() }).strict();

/** What `.search` may filter and sort on; `cr` is the content_requests row, `o` the wallet owner (users). */
export const CONTENT_REQUEST_SEARCH_DEFINITION: ScimResourceDefinition = {
  schema: CONTENT_REQUEST_SCHEMA,
  uniqueOrder: 'cr.id',
  defaultOrder: 'cr.created_at',
  attributes: {
    id: { type: 'string', column: 'cr.id::text', returned: 'always' },
    type: { type: 'string', column: 'cr.type' },
    status: { type: 'string', column: 'cr.status' },
    reason: { type: 'string', column: 'cr.reason' },
    target: {
      type: 'complex',
      // References inside a complex attribute: filterable by their dotted names (target.device.value).
      subAttributes: {
        device: { type: 'string' },
        devicePolicy: { type: 'string' },
        'device.value': { type: 'string', column: 'cr.device_id::text' },
        'devicePolicy.value': { type: 'string', column: 'cr.device_policy_id::text' },
      },
    },
    wallet: {
      type: 'complex',
      subAttributes: { value: { type: 'string', column: 'cr.wallet_id::text' }, display: { type: 'string' }, $ref: { type: 'string' } },
    },
    parameters: {
      type: 'complex',
      subAttributes: { id: { type: 'string' }, value: { type: 'string' }, type: { type: 'string' }, encoding: { type: 'string' } },
    },
    requestedBy: { type: 'string', column: 'cr.requested_by' },
    approvedBy: { type: 'string', column: 'cr.approved_by' },
    expiresAt: { type: 'dateTime', column: 'cr.expires_at' },
    failure: { type: 'complex', subAttributes: { detail: { type: 'string' } } },
    meta: metaAttribute('cr'),
  },
};
