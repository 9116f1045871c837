import { invalidValue, z } from '@app/common';
import { ApiVersion } from '../common/request-rules';
import { connectionStringProblem } from './connection-string';

/** The push delivery gateway resource (interface, "Push delivery gateway resource"; DECISIONS 10). */
export const PUSH_GATEWAY_SCHEMA = 'urn:vendor:scim:api:idp:2.0:DeliveryGateway:Push';
export const PUSH_GATEWAY_RESOURCE_TYPE = 'Push Delivery Gateway';

export const GATEWAY_TYPES = ['CLOUD_WNS_PUSH', 'CLOUD_GCM_PUSH', 'CLOUD_APNS_PUSH'] as const;
export type GatewayType = (typeof GATEWAY_TYPES)[number];
export const OPERATING_SYSTEMS = ['WINDOWS', 'WINDOWS10', 'WINDOWS11', 'Android', 'iOS12', 'iOS13'] as const;
export type OperatingSystem = (typeof OPERATING_SYSTEMS)[number];

/** Seconds a notification is kept for an offline device when the gateway does not say (one day). */
export const DEFAULT_NOTIFICATION_TTL_S = 86_400;
/** 28 days: the longest time to live the push services accept (FCM's maximum). */
export const MAX_NOTIFICATION_TTL_S = 2_419_200;

export const LIMITS = { name: 128, hub: 260, appId: 256, notes: 4000, title: 256, msg: 2048 } as const;

/** The api-version from which each attribute exists (DECISIONS 10), in requests and in responses. */
export const ATTRIBUTE_SINCE: Readonly<Record<string, ApiVersion>> = {
  type: 1,
  name: 1,
  hub: 1,
  connectionString: 1,
  notificationTimeToLive: 1,
  supportedOperatingSystems: 2,
  appId: 2,
  messageTemplates: 3,
  notes: 3,
};

export interface MessageTemplate {
  msg: string;
  title?: string;
}
export interface MessageTemplates {
  credential?: MessageTemplate;
  challenge?: MessageTemplate;
}

/**
 * Attributes of a later api-version than the request's are refused by name, with the version that
 * has them (DECISIONS 10), before any other check of the body, so the caller learns what to add.
 */
export function refuseLaterAttributes(body: unknown, version: ApiVersion): void {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return;
  const later = Object.keys(body).filter((key) => (ATTRIBUTE_SINCE[key] ?? 1) > version);
  if (later.length === 0) return;
  const needed = Math.max(...later.map((key) => ATTRIBUTE_SINCE[key]));
  const named = later.map((key) => `"${key}" (api-version=${ATTRIBUTE_SINCE[key]})`).join(', ');
  throw invalidValue(
    `Attribute${later.length > 1 ? 's' : ''} ${named} ${later.length > 1 ? 'are' : 'is'} not part of api-version=${version}; send the request with ?api-version=${needed} to use ${later.length > 1 ? 'them' : 'it'}.`,
  );
}

const quoted = (input: unknown): string => JSON.stringify(input)?.slice(0, 60) ?? String(input);
// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x1f\x7f]/;
// eslint-disable-next-line no-control-regex
const CONTROL_EXCEPT_LINES = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/;

/** A string attribute; `what` says what it must be, in every message. */
function text(what: string, max: number, options: { min?: number; lines?: boolean } = {}) {
  const min = options.min ?? 1;
  return z
    .string({ error: (issue) => (issue.input === undefined ? `is required (${what})` : `must be ${what}`) })
    .trim()
    .min(min, `must be ${what}`)
    .max(max, `must be ${what}`)
    .refine((value) => !(options.lines ? CONTROL_EXCEPT_LINES : CONTROL).test(value), 'must not contain control characters');
}

const schemas = z
  .array(z.string(), {
    error: (issue) => (issue.input === undefined ? `is required and must hold "${PUSH_GATEWAY_SCHEMA}"` : `must be an array holding "${PUSH_GATEWAY_SCHEMA}"`),
  })
  .refine((list) => list.includes(PUSH_GATEWAY_SCHEMA), `must hold "${PUSH_GATEWAY_SCHEMA}"`)
  .refine((list) => list.every((urn) => urn === PUSH_GATEWAY_SCHEMA), `may hold only "${PUSH_GATEWAY_SCHEMA}" (this resource has no extension schemas)`);

const type = z.enum(GATEWAY_TYPES, {
  error: (issue) =>
    issue.input === undefined
      ? `is required, one of ${GATEWAY_TYPES.join(', ')}`
      : `${quoted(issue.input)} is not a gateway type; allowed: ${GATEWAY_TYPES.join(', ')}`,
});

const name = text(`a name of 1-${LIMITS.name} characters`, LIMITS.name);

const connectionString = z
  .string({ error: () => 'must be a string of Key=Value; pairs with Endpoint (sb://), SharedAccessKeyName and SharedAccessKey' })
  .superRefine((value, context) => {
    const problem = connectionStringProblem(value);
    if (problem) context.addIssue({ code: 'custom', message: problem });
  });

const TTL_WHAT = `a string holding a whole number of seconds from 0 to ${MAX_NOTIFICATION_TTL_S} (28 days), e.g. "${DEFAULT_NOTIFICATION_TTL_S}"`;
const notificationTimeToLive = z
  .string({ error: () => `must be ${TTL_WHAT}` })
  .regex(/^\d{1,10}$/, `must be ${TTL_WHAT}`)
  .refine((value) => Number(value) <= MAX_NOTIFICATION_TTL_S, `must be ${TTL_WHAT}`)
  .transform(Number);

const operatingSystem = z.enum(OPERATING_SYSTEMS, {
  error: (issue) => `${quoted(issue.input)} is not a supported operating system; allowed: ${OPERATING_SYSTEMS.join(', ')}`,
});
const supportedOperatingSystems = z
  .array(operatingSystem, { error: () => `must be an array of operating systems from ${OPERATING_SYSTEMS.join(', ')}` })
  .refine((list) => new Set(list).size === list.length, 'lists an operating system twice');

const template = z
  .object(
    {
      msg: text(`the message text, 1-${LIMITS.msg} characters`, LIMITS.msg, { lines: true }),
      title: text(`a title of 1-${LIMITS.title} characters`, LIMITS.title).nullable().optional(),
    },
    { error: () => 'must be an object with "msg" (required) and "title" (optional)' },
  )
  .strict();

const messageTemplates = z
  .object(
    { credential: template.nullable().optional(), challenge: template.nullable().optional() },
    { error: () => 'must be an object with "credential" and/or "challenge" templates' },
  )
  .strict();

/** Attributes a create or a replace may carry; `null` clears an optional one (DECISIONS 7). */
const configurable = {
  schemas,
  hub: text(`a notification hub name or path of 1-${LIMITS.hub} characters`, LIMITS.hub).nullable().optional(),
  connectionString: connectionString.nullable().optional(),
  notificationTimeToLive: notificationTimeToLive.nullable().optional(),
  supportedOperatingSystems: supportedOperatingSystems.nullable().optional(),
  appId: text(`an application id of 1-${LIMITS.appId} characters`, LIMITS.appId).nullable().optional(),
  notes: text(`free text of at most ${LIMITS.notes} characters`, LIMITS.notes, { min: 0, lines: true }).nullable().optional(),
  messageTemplates: messageTemplates.nullable().optional(),
};

/** POST: `schemas`, `type` and `name` are required; the gateway can be configured further later. */
export const createGatewaySchema = z.object({ ...configurable, type, name }).strict();

/**
 * PUT (DECISIONS 10): nothing but `schemas` is required, attributes left out keep their values.
 * `type` is compared with the stored one by the service (absent or equal; else `mutability`).
 */
export const replaceGatewaySchema = z
  .object({
    ...configurable,
    type: z.unknown().optional(),
    name: z
      .string({ error: (issue) => (issue.input === null ? 'cannot be cleared: a gateway always has a name' : `must be a name of 1-${LIMITS.name} characters`) })
      .pipe(name)
      .optional(),
  })
  .strict();

export type CreateGatewayInput = z.infer<typeof createGatewaySchema>;
export type ReplaceGatewayInput = z.infer<typeof replaceGatewaySchema>;
