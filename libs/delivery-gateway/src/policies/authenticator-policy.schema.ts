import { z } from '@app/common';

/** The authenticator policy resource (see the module's header for its shape). */
export const AUTHENTICATOR_POLICY_SCHEMA = 'urn:vendor:scim:api:idp:2.0:Policy:Authenticator';
export const AUTHENTICATOR_POLICY_RESOURCE_TYPE = 'Authenticator Policy';
/** Gateways one policy may list: one per gateway type several times over is more than any tenant uses. */
export const MAX_BOUND_GATEWAYS = 20;
const NAME_MAX = 128;
const DESCRIPTION_MAX = 1000;

// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x1f\x7f]/;

const schemas = z
  .array(z.string(), {
    error: (issue) =>
      issue.input === undefined ? `is required and must hold "${AUTHENTICATOR_POLICY_SCHEMA}"` : `must be an array holding "${AUTHENTICATOR_POLICY_SCHEMA}"`,
  })
  .refine((list) => list.includes(AUTHENTICATOR_POLICY_SCHEMA), `must hold "${AUTHENTICATOR_POLICY_SCHEMA}"`)
  .refine((list) => list.every((urn) => urn === AUTHENTICATOR_POLICY_SCHEMA), `may hold only "${AUTHENTICATOR_POLICY_SCHEMA}"`);

const name = z
  .string({ error: (issue) => (issue.input === undefined ? `is required (a name of 1-${NAME_MAX} characters)` : `must be a name of 1-${NAME_MAX} characters`) })
  .trim()
  .min(1, `must be a name of 1-${NAME_MAX} characters`)
  .max(NAME_MAX, `must be a name of 1-${NAME_MAX} characters`)
  .refine((value) => !CONTROL.test(value), 'must not contain control characters');

const description = z
  .string({ error: () => `must be text of at most ${DESCRIPTION_MAX} characters` })
  .trim()
  .max(DESCRIPTION_MAX, `must be text of at most ${DESCRIPTION_MAX} characters`);

/** A reference to a gateway of the tenant; `display` is read-only (the gateway's name) and ignored. */
const gatewayReference = z
  .object(
    {
      value: z.string({
        error: (issue) =>
          issue.input === undefined ? 'is required (the id of a push delivery gateway)' : 'must be the id (a string) of a push delivery gateway',
      }),
      display: z.string({ error: () => 'must be a string (it is read-only: the gateway name)' }).optional(),
    },
    { error: () => 'must be an object {value, display}' },
  )
  .strict()
  .transform((reference) => reference.value);

const deliveryGateways = z
  .array(gatewayReference, { error: () => 'must be an array of {value, display} gateway references, in priority order' })
  .max(MAX_BOUND_GATEWAYS, `may list at most ${MAX_BOUND_GATEWAYS} gateways`);

export const createPolicySchema = z
  .object({ schemas, name, description: description.nullable().optional(), deliveryGateways: deliveryGateways.nullable().optional() })
  .strict();

/** PUT: attributes left out keep their values, as for gateways; `deliveryGateways` replaces the whole list. */
export const replacePolicySchema = z
  .object({
    schemas,
    name: z
      .string({ error: (issue) => (issue.input === null ? 'cannot be cleared: a policy always has a name' : `must be a name of 1-${NAME_MAX} characters`) })
      .pipe(name)
      .optional(),
    description: description.nullable().optional(),
    deliveryGateways: deliveryGateways.nullable().optional(),
  })
  .strict();

export type CreatePolicyInput = z.infer<typeof createPolicySchema>;
export type ReplacePolicyInput = z.infer<typeof replacePolicySchema>;
