import type { SchemaObject } from '@nestjs/swagger';
import { META_RESPONSE_SCHEMA, z } from '@app/common';
import { OPERATING_SYSTEMS } from '../gateways/push-gateway.schema';

/** The Authenticator resource and its challenge (CREDENTIAL-MANAGEMENT.md "Authenticators"). */
export const AUTHENTICATOR_SCHEMA = 'urn:vendor:scim:api:cms:1.0:Authenticator';
export const AUTHENTICATOR_CHALLENGE_SCHEMA = 'urn:vendor:scim:api:cms:1.0:AuthenticatorChallenge';
export const AUTHENTICATOR_RESOURCE_TYPE = 'Authenticator';
export const DISPLAY_NAME_MAX = 64;
/** A WNS channel URI, the longest of the push services' handles, stays well within it. */
export const PUSH_HANDLE_MAX = 2048;

// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x1f\x7f]/;
const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

const schemas = z
  .array(z.string(), {
    error: (issue) =>
      issue.input === undefined ? `is required and must hold "${AUTHENTICATOR_SCHEMA}"` : `must be an array holding "${AUTHENTICATOR_SCHEMA}"`,
  })
  .refine((list) => list.length > 0 && list.every((urn) => urn === AUTHENTICATOR_SCHEMA), `must hold only "${AUTHENTICATOR_SCHEMA}"`);

const displayNameRule = `must be 1-${DISPLAY_NAME_MAX} characters without control characters, the name the person knows the app by`;
export const displayName = z
  .string({ error: (issue) => (issue.input === undefined ? `is required: ${displayNameRule}` : displayNameRule) })
  .trim()
  .min(1, displayNameRule)
  .max(DISPLAY_NAME_MAX, displayNameRule)
  .refine((value) => !CONTROL.test(value), displayNameRule);

const operatingSystem = z.enum(OPERATING_SYSTEMS, {
  error: (issue) =>
    `${typeof issue.input === 'string' ? `"${issue.input.slice(0, 40)}"` : 'it'} is not a supported operating system; allowed: ${OPERATING_SYSTEMS.join(', ')}`,
});

const pushHandleRule = `must be 1-${PUSH_HANDLE_MAX} printable ASCII characters without spaces (the push service's registration id, device token or channel URI)`;
const pushHandle = z
  .string({ error: (issue) => (issue.input === undefined ? `is required: ${pushHandleRule}` : pushHandleRule) })
  .max(PUSH_HANDLE_MAX, pushHandleRule)
  .regex(VISIBLE_ASCII, pushHandleRule);

const challenge = z
  .string({ error: () => 'is required: the challenge that POST .../Authenticators/.challenge answered' })
  .min(1, 'is required: the challenge that POST .../Authenticators/.challenge answered')
  .max(128, 'is not a challenge this service gives; get one with POST .../Authenticators/.challenge');

const signature = z.string({ error: () => 'is required: the ES256 signature (r||s, base64url) of the signingInput the challenge came with' });

/** POST .../Authenticators. `publicKey` is checked by parsePublicKey, whose messages are more precise than a schema's. */
export const registerAuthenticatorSchema = z
  .object({
    schemas,
    displayName,
    operatingSystem,
    pushHandle,
    publicKey: z.unknown(),
    challenge,
    signature,
  })
  .strict();

export type RegisterAuthenticatorInput = z.infer<typeof registerAuthenticatorSchema>;

/** What an answer documents (OpenAPI); the push handle is never returned. */
export const AUTHENTICATOR_RESPONSE: SchemaObject = {
  type: 'object',
  required: ['schemas', 'id'],
  properties: {
    schemas: { type: 'array', items: { type: 'string' }, example: [AUTHENTICATOR_SCHEMA] },
    id: { type: 'string', format: 'uuid' },
    displayName: { type: 'string' },
    operatingSystem: { type: 'string', enum: [...OPERATING_SYSTEMS] },
    publicKey: { type: 'object', properties: { kty: { type: 'string' }, crv: { type: 'string' }, x: { type: 'string' }, y: { type: 'string' } } },
    thumbprint: { type: 'string', description: 'RFC 7638 JWK thumbprint (SHA-256, base64url)' },
    owner: { type: 'object', properties: { value: { type: 'string' }, type: { type: 'string' } }, description: 'also $ref, the URI of the user' },
    meta: META_RESPONSE_SCHEMA,
  },
};

export const CHALLENGE_RESPONSE: SchemaObject = {
  type: 'object',
  required: ['schemas', 'challenge', 'signingInput', 'expiresAt'],
  properties: {
    schemas: { type: 'array', items: { type: 'string' }, example: [AUTHENTICATOR_CHALLENGE_SCHEMA] },
    challenge: { type: 'string', description: '32 random octets, base64url; usable once, for 5 minutes' },
    signingInput: { type: 'string', description: 'what the app signs with ES256: authenticator-registration.{org}.{user id}.{challenge}' },
    expiresAt: { type: 'string', format: 'date-time' },
  },
};
