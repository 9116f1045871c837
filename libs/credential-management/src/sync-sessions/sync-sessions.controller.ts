import { Body, Controller, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Audited } from '@app/audit';
import { Permission } from '@app/auth';
import {
  Actor,
  AnswersWithSecrets,
  ApiJsonBody,
  ApiSchemaResponse,
  CurrentPrincipal,
  Principal,
  RequestActor,
  RequirePermission,
  ScimMediaTypes,
  credentialManagementPaths,
} from '@app/common';
import { SyncSessionPresenter } from './sync-session.presenter';
import { SYNC_SESSION_SCHEMA, syncSessionSchema } from './sync-session.schema';
import { SyncSessionService } from './sync-session.service';

/** Everything a sync session may write: the request's outcome, the credentials and certificates, the device's move. */
export const SYNC_SESSION_EVENTS = [
  'content_request.complete',
  'content_request.fail',
  'content_request.unlock_pin',
  'credential.issue',
  'credential.revoke',
  'certificate.issue',
  'certificate.revoke',
  'certificate.hold',
  'crl.publish',
  'device.issue',
  'device.produce',
  'device.recycle',
] as const;

export const EXAMPLE_SESSION = {
  schemas: [SYNC_SESSION_SCHEMA],
  contentRequest: { value: '3f2a1b0c-9d8e-4f7a-b6c5-d4e3f2a1b0c9' },
  device: { ATR: '3B8F8001', CUID: '4711' },
  results: [{ operation: 'ISSUE_CREDENTIAL', status: 'SUCCESS', credentialType: 'PKI_CERTIFICATE', csr: '-----BEGIN CERTIFICATE REQUEST-----\n...' }],
};

export const SYNC_SESSION_RESPONSE = {
  type: 'object',
  properties: {
    schemas: { type: 'array', items: { type: 'string' } },
    id: { type: 'string' },
    contentRequest: { type: 'object', properties: { value: { type: 'string' }, status: { type: 'string' } } },
    device: {
      type: 'object',
      properties: {
        value: { type: 'string' },
        status: { type: 'string' },
        adminKey: {
          type: 'string',
          pattern: '^[0-9A-F]{48}$',
          description:
            "A smart card's 3DES administration key (hex) for the card client to set on the card; issuance, produce and update of a smart card only, returned in this answer only",
        },
      },
    },
    credentials: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          value: { type: 'string' },
          type: { type: 'string' },
          status: { type: 'string' },
          certificate: {
            type: 'object',
            properties: { value: { type: 'string' }, pem: { type: 'string' }, chain: { type: 'array', items: { type: 'string' } } },
          },
          secret: { type: 'string', description: 'OATH secret, base32; returned in this answer only' },
          otpauthUri: { type: 'string' },
        },
      },
    },
  },
} as const;

/** POST /SyncSession (CREDENTIAL-MANAGEMENT.md "SyncSession"; DECISIONS 5.2: syncSession.execute). */
@ApiTags('credential management: sync sessions')
@ApiBearerAuth()
@Controller(credentialManagementPaths('SyncSession'))
export class SyncSessionsController {
  constructor(
    private readonly sessions: SyncSessionService,
    private readonly presenter: SyncSessionPresenter,
  ) {}

  @Post()
  @Audited(...SYNC_SESSION_EVENTS)
  @AnswersWithSecrets()
  @ScimMediaTypes()
  @RequirePermission(Permission.SyncSessionExecute)
  @ApiOperation({ summary: 'Report what happened on the card for an approved content request: completes it (credentials issued, device moved) or fails it' })
  @ApiJsonBody(syncSessionSchema, EXAMPLE_SESSION)
  @ApiSchemaResponse(SYNC_SESSION_RESPONSE, 201)
  async execute(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Body() body: unknown) {
    return this.presenter.session(await this.sessions.execute(principal, body, actor));
  }
}
