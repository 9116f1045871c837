import { ScimResourceDefinition, metaAttribute, z, UUID_PATTERN } from '@app/common';
import { CONTENT_REQUEST_REASONS } from '../content-requests/content-request.schema';
import { syncSessionSchema } from '../sync-sessions/sync-session.schema';

export const DEVICE_FLOW_SCHEMA = 'urn:vendor:scim:api:cms:1.0:DeviceFlow';
export const DEVICE_FLOW_TYPES = ['ASSISTED_ISSUANCE', 'APPLICATIONS_UPDATE', 'REISSUANCE'] as const;
export type DeviceFlowType = (typeof DEVICE_FLOW_TYPES)[number];
export const DEVICE_FLOW_STEPS = ['COLLECT_DATA', 'PRINT', 'ENCODE'] as const;
export type DeviceFlowStep = (typeof DEVICE_FLOW_STEPS)[number];
export type DeviceFlowStatus = 'IN_PROGRESS' | 'COMPLETED' | 'FAILED' | 'CANCELLED';

const reference = (what: string) =>
  z.object(
    { value: z.string({ message: `is required: the id of the ${what}` }).regex(UUID_PATTERN, `must be the id of a ${what} (a UUID)`) },
    { error: `must be {value: <${what} id>}` },
  );

/** POST /DeviceFlow (CREDENTIAL-MANAGEMENT.md "DeviceFlow"). */
export const startDeviceFlowSchema = z
  .object({
    schemas: z.array(z.string()).optional(),
    type: z.enum(DEVICE_FLOW_TYPES, {
      error: (issue) => `${issue.input === undefined ? 'is required: ' : 'must be '}one of ${DEVICE_FLOW_TYPES.join(', ')}`,
    }),
    wallet: reference('wallet'),
    device: reference('device'),
    devicePolicy: reference('device policy'),
    printer: reference('printer').optional(),
    oldDevice: reference('device').optional(),
    reason: z.enum(CONTENT_REQUEST_REASONS, { message: `must be one of ${CONTENT_REQUEST_REASONS.join(', ')}` }).optional(),
  })
  .strict();
export type StartDeviceFlow = z.infer<typeof startDeviceFlowSchema>;

const response = z
  .object({
    name: z.string({ message: 'must be a string' }).min(1, 'must not be empty').max(64, 'must be at most 64 characters'),
    output: z.string({ message: 'must be a string' }).max(1024 * 1024, 'must be at most 1 MiB'),
  })
  .strict();

/**
 * POST /DeviceFlow/{id}: `{step, responses}` for COLLECT_DATA and PRINT ({name, output}), `{step:
 * "ENCODE", device: {ATR, CUID}, responses}` whose responses are sync-session results, or `{cancel: true}`.
 */
export const continueDeviceFlowSchema = z.union([
  z.object({ schemas: z.array(z.string()).optional(), cancel: z.literal(true, { message: 'must be true' }) }).strict(),
  z
    .object({
      schemas: z.array(z.string()).optional(),
      step: z.enum(['COLLECT_DATA', 'PRINT'], { message: `must be one of ${DEVICE_FLOW_STEPS.join(', ')}` }),
      responses: z.array(response, { message: 'must be an array of {name, output}' }).max(50, 'must hold at most 50 responses'),
    })
    .strict(),
  z
    .object({
      schemas: z.array(z.string()).optional(),
      step: z.literal('ENCODE'),
      device: syncSessionSchema.shape.device,
      responses: syncSessionSchema.shape.results,
    })
    .strict(),
]);

/** The DeviceFlow resource's attributes, for its answers' schema. */
export const DEVICE_FLOW_DEFINITION: ScimResourceDefinition = {
  schema: DEVICE_FLOW_SCHEMA,
  uniqueOrder: 'f.id',
  attributes: {
    id: { type: 'string', column: 'f.id::text', returned: 'always' },
    type: { type: 'string', column: 'f.type' },
    status: { type: 'string', column: 'f.status' },
    steps: { type: 'string' },
    currentStep: { type: 'string', column: 'f.current_step' },
    wallet: { type: 'complex', subAttributes: { value: { type: 'string' }, $ref: { type: 'string' } } },
    device: { type: 'complex', subAttributes: { value: { type: 'string' }, $ref: { type: 'string' } } },
    contentRequest: { type: 'complex', subAttributes: { value: { type: 'string' }, status: { type: 'string' }, $ref: { type: 'string' } } },
    responses: { type: 'complex', subAttributes: { step: { type: 'string' }, name: { type: 'string' }, output: { type: 'string' } } },
    operations: {
      type: 'complex',
      subAttributes: { name: { type: 'string' }, type: { type: 'string' }, payload: { type: 'string' }, parameters: { type: 'string' } },
    },
    meta: metaAttribute('f'),
  },
};
