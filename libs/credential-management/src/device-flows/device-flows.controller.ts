import { Body, Controller, HttpCode, Param, Post, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Audited } from '@app/audit';
import {
  Actor,
  AnswersWithSecrets,
  ApiJsonBody,
  ApiScimResponse,
  AuthorizedBy,
  CurrentPrincipal,
  PathFormats,
  Principal,
  RequestActor,
  ScimMediaTypes,
  credentialManagementPaths,
} from '@app/common';
import { SYNC_SESSION_EVENTS, SYNC_SESSION_RESPONSE } from '../sync-sessions/sync-sessions.controller';
import { DeviceFlowPresenter } from './device-flow.presenter';
import { DEVICE_FLOW_DEFINITION, DEVICE_FLOW_SCHEMA, continueDeviceFlowSchema, startDeviceFlowSchema } from './device-flow.schema';
import { DeviceFlowService } from './device-flow.service';

const BY_TYPE = 'the permission of the flow type: deviceFlow.issuance (ASSISTED_ISSUANCE, REISSUANCE), deviceFlow.applicationsUpdate (APPLICATIONS_UPDATE)';
const RESPONSE = { multiValued: ['responses', 'operations'] };

/** DeviceFlow (CREDENTIAL-MANAGEMENT.md "DeviceFlow"; DECISIONS 5.2: the permission depends on the flow's type, checked once it is known). */
@ApiTags('credential management: device flows')
@ApiBearerAuth()
@PathFormats({ id: 'uuid' })
@Controller(credentialManagementPaths('DeviceFlow'))
export class DeviceFlowsController {
  constructor(
    private readonly flows: DeviceFlowService,
    private readonly presenter: DeviceFlowPresenter,
  ) {}

  @Post()
  @Audited('device_flow.start', 'content_request.create', 'device.assign', 'device.revoke', 'credential.revoke', 'certificate.revoke', 'crl.publish')
  @ScimMediaTypes()
  @AuthorizedBy(BY_TYPE)
  @ApiOperation({
    summary: 'Start a desk issuance (ASSISTED_ISSUANCE, REISSUANCE: the old card is revoked first) or an APPLICATIONS_UPDATE, with its content request',
  })
  @ApiJsonBody(startDeviceFlowSchema, {
    schemas: [DEVICE_FLOW_SCHEMA],
    type: 'ASSISTED_ISSUANCE',
    wallet: { value: 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d' },
    device: { value: '5b0c7d6e-9a43-4c1f-8a57-2f1e3c4d5a6b' },
    devicePolicy: { value: '0e7c2b1a-4d3f-4b6a-9c8d-7e6f5a4b3c2d' },
  })
  @ApiScimResponse(DEVICE_FLOW_DEFINITION, { ...RESPONSE, status: 201 })
  async start(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Body() body: unknown, @Res({ passthrough: true }) reply: FastifyReply) {
    const view = await this.flows.start(principal, body, actor);
    reply.header('Location', this.presenter.location(view.row.id));
    return this.presenter.flow(view);
  }

  @Post(':id')
  @Audited('device_flow.advance', 'device_flow.cancel', 'content_request.cancel', 'user.enrollment_data.replace', 'device.update', ...SYNC_SESSION_EVENTS)
  @HttpCode(200)
  @AnswersWithSecrets()
  @ScimMediaTypes()
  @AuthorizedBy(BY_TYPE)
  @ApiOperation({
    summary: "Answer the current step ({step, responses}; ENCODE with the card's {ATR, CUID} and sync-session results) or cancel ({cancel: true})",
  })
  @ApiJsonBody(continueDeviceFlowSchema, { step: 'COLLECT_DATA', responses: [{ name: 'employeeId', output: 'E-1001' }] })
  @ApiScimResponse(DEVICE_FLOW_DEFINITION, { ...RESPONSE, extra: { syncSession: SYNC_SESSION_RESPONSE } })
  async continue(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    return this.presenter.flow(await this.flows.continue(principal, id, body, actor));
  }
}
