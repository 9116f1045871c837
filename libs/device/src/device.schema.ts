import { DomainError, ScimResourceDefinition, parseBody, z, metaAttribute, isUuid } from '@app/common';
import { DEVICE_REASONS, DeviceReason } from './lifecycle/device-lifecycle';

/** The Device resource (interface "Device resource"; DECISIONS 8). */
export const DEVICE_SCHEMA = 'urn:vendor:scim:api:cms:1.0:Device';
export const DEVICE_RESOURCE_PATH = '/aims/rs/scim/v2/Device';

/** ATR: hexadecimal text, even length, 2 to 33 bytes (ISO/IEC 7816-3 allows at most 33). */
export const ATR_PATTERN = /^(?:[0-9A-Fa-f]{2}){2,33}$/;
/** CUID: 1 to 64 decimal digits; leading zeros count (it is compared as text). */
export const CUID_PATTERN = /^[0-9]{1,64}$/;
/** At most this many {ATR, CUID} pairs on one device. */
export const MAX_EXTERNAL_IDS = 16;

export interface ExternalId {
  ATR: string;
  CUID: string;
}

export const ATR_RULE = 'must be hexadecimal text of even length, 2 to 33 bytes (4 to 66 hex digits)';
export const CUID_RULE = 'must be 1 to 64 decimal digits';

const externalIdSchema = z
  .object({
    ATR: z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') }).regex(ATR_PATTERN, ATR_RULE),
    CUID: z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') }).regex(CUID_PATTERN, CUID_RULE),
  })
  .strict();

const createDeviceSchema = z
  .object({
    schemas: z
      .array(z.string(), { error: (issue) => (issue.input === undefined ? `is required and must contain "${DEVICE_SCHEMA}"` : 'must be an array of strings') })
      .refine((schemas) => schemas.includes(DEVICE_SCHEMA), { message: `must contain "${DEVICE_SCHEMA}"` })
      .refine((schemas) => schemas.every((s) => s === DEVICE_SCHEMA), {
        message: `may name only "${DEVICE_SCHEMA}" (the Device resource has no extension schema)`,
      }),
    externalIds: z
      .array(externalIdSchema, {
        error: (issue) => (issue.input === undefined ? 'is required: a non-empty array of {ATR, CUID}' : 'must be an array of {ATR, CUID}'),
      })
      .min(1, 'must hold at least one {ATR, CUID}')
      .max(MAX_EXTERNAL_IDS, `must hold at most ${MAX_EXTERNAL_IDS} {ATR, CUID}`)
      .superRefine((ids, ctx) => {
        const seen = new Set<string>();
        for (const [index, id] of ids.entries()) {
          if (seen.has(id.CUID)) ctx.addIssue({ code: 'custom', path: [index, 'CUID'], message: `repeats CUID ${id.CUID}` });
          seen.add(id.CUID);
        }
      }),
  })
  .strict();

/** SCIM attribute names are case-insensitive (RFC 7643 2.1): rename keys to their declared spelling. */
function canonicalKeys(value: unknown, names: readonly string[]): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([key, v]) => [names.find((name) => name.toLowerCase() === key.toLowerCase()) ?? key, v]),
  );
}

export function canonicalExternalId(value: unknown): unknown {
  return canonicalKeys(value, ['ATR', 'CUID']);
}

/**
 * The body of POST /Device: `schemas` and `externalIds`; `id`, `meta` and `status` are read-only and
 * ignored (DECISIONS 7); anything else is a 400 naming it. ATRs are stored upper-case.
 */
export function parseCreateDevice(body: unknown): ExternalId[] {
  let input = canonicalKeys(body, ['schemas', 'externalIds', 'status', 'id', 'meta']);
  if (input && typeof input === 'object' && !Array.isArray(input)) {
    const { status: _status, ...rest } = input as Record<string, unknown>;
    input = { ...rest, ...(Array.isArray(rest.externalIds) ? { externalIds: rest.externalIds.map(canonicalExternalId) } : {}) };
  }
  const parsed = parseBody(createDeviceSchema, input, 'Device');
  return parsed.externalIds.map((id) => ({ ATR: id.ATR.toUpperCase(), CUID: id.CUID }));
}

/** The body of a lifecycle action (documented for /api-docs from this same schema). */
export const deviceActionSchema = z
  .object({
    // A SCIM client may send its message schema; it carries nothing here.
    schemas: z.array(z.string()).optional(),
    reason: z.enum(DEVICE_REASONS, { error: `must be one of ${DEVICE_REASONS.join(', ')}` }).optional(),
  })
  .strict();

/** The body of POST /Device/{id}/{action}: nothing, a form with `reason`, or JSON `{"reason": ...}`. */
export function parseActionBody(body: unknown): DeviceReason | undefined {
  if (body === undefined || body === null || body === '') return undefined;
  if (typeof body === 'string') throw new DomainError('INVALID_SYNTAX', 'Send the reason as a form field (reason=LOST) or as JSON ({"reason": "LOST"}).');
  return parseBody(deviceActionSchema, canonicalKeys(body, ['schemas', 'reason']), 'action request').reason;
}

export function isDeviceId(value: string): boolean {
  return isUuid(value);
}

/** The Device's multi-valued attributes (RFC 7643 2.4), for its /Schemas entry and its OpenAPI answers. */
export const DEVICE_MULTI_VALUED = ['externalIds', 'credentials'];

/**
 * What `.search` may filter and sort on (DECISIONS 9): the documented attributes. `d` is the devices
 * row, `u` its owner (LEFT JOIN users), `e` a row of device_external_ids.
 */
export const DEVICE_SEARCH_DEFINITION: ScimResourceDefinition = {
  schema: DEVICE_SCHEMA,
  uniqueOrder: 'd.id',
  defaultOrder: 'd.created_at',
  attributes: {
    id: { type: 'string', column: 'd.id::text', caseExact: false, returned: 'always' },
    externalIds: {
      type: 'complex',
      multiValued: { exists: (condition) => `EXISTS (SELECT 1 FROM device_external_ids e WHERE e.device_id = d.id AND ${condition})` },
      subAttributes: {
        ATR: { type: 'string', column: 'e.atr' },
        CUID: { type: 'string', column: 'e.cuid', caseExact: true },
      },
    },
    status: {
      type: 'complex',
      subAttributes: {
        status: { type: 'string', column: 'd.status' },
        reason: { type: 'string', column: 'd.reason' },
      },
    },
    owner: {
      type: 'complex',
      subAttributes: {
        value: { type: 'string', column: 'd.owner_user_id::text' },
        display: { type: 'string', column: 'u.user_name' },
        $ref: { type: 'string' },
        type: { type: 'string' },
      },
    },
    issuanceDate: { type: 'dateTime', column: 'd.issued_at' },
    // What the device carries, supplied by credential management (DeviceContents): returned and
    // projectable, not filterable (the device's statement does not know the credential tables).
    policy: { type: 'complex', subAttributes: { value: { type: 'string' }, $ref: { type: 'string' } } },
    credentials: {
      type: 'complex',
      subAttributes: { value: { type: 'string' }, $ref: { type: 'string' }, type: { type: 'string' }, status: { type: 'string' } },
    },
    meta: metaAttribute('d'),
  },
};
