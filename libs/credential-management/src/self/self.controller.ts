import { Audited, NotAudited } from '@app/audit';
import { Body, Controller, Get, HttpCode, Param, Post, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { Permission } from '@app/auth';
import {
  Actor,
  AnswersWithSecrets,
  CurrentPrincipal,
  DomainError,
  PathFormats,
  Principal,
  RequestActor,
  RequirePermission,
  ScimMediaTypes,
  credentialManagementPaths,
  listResponse,
  ApiJsonBody,
  ApiSchemaResponse,
  ApiScimResponse,
  ApiSearchBody,
  searchFromBody,
  serializedOnce,
} from '@app/common';
import { USER_SEARCH_DEFINITION } from '@app/accounts';
import { DEVICE_MULTI_VALUED, DEVICE_SEARCH_DEFINITION, DevicePresenter } from '@app/device';
import { ContentRequestPresenter } from '../content-requests/content-request.presenter';
import {
  CONTENT_REQUEST_SCHEMA,
  CONTENT_REQUEST_SEARCH_DEFINITION,
  actionSchema,
  createContentRequestSchema,
} from '../content-requests/content-request.schema';
import { SyncSessionPresenter } from '../sync-sessions/sync-session.presenter';
import { EXAMPLE_SESSION, SYNC_SESSION_EVENTS, SYNC_SESSION_RESPONSE } from '../sync-sessions/sync-sessions.controller';
import { syncSessionSchema } from '../sync-sessions/sync-session.schema';
import { WALLET_SEARCH_DEFINITION } from '../wallets/wallet.schema';
import { UserPresenter } from '../users/user.presenter';
import { WalletPresenter } from '../wallets/wallet.presenter';
import { SelfService } from './self.service';

/** The entry points the interface marks "not implemented currently" (CREDENTIAL-MANAGEMENT.md "Self"): 501 with a SCIM error. */
function notImplemented(what: string): never {
  throw new DomainError(
    'NOT_IMPLEMENTED',
    `${what} is not implemented by this platform; an operator issues devices and credentials (ContentRequest, DeviceFlow).`,
  );
}

/**
 * Self: the caller's own user, devices and wallet (CREDENTIAL-MANAGEMENT.md "Self"; DECISIONS 5.2,
 * scope Device). Only a user's token (password or jwt-bearer grant) has a self; another user's
 * objects answer 404 as if they did not exist.
 */
@ApiTags('credential management: self')
@ApiBearerAuth()
@ScimMediaTypes()
@PathFormats({ id: 'uuid' })
@Controller(credentialManagementPaths('Self'))
export class SelfController {
  constructor(
    private readonly self: SelfService,
    private readonly users: UserPresenter,
    private readonly devices: DevicePresenter,
    private readonly wallets: WalletPresenter,
    private readonly requests: ContentRequestPresenter,
    private readonly sessions: SyncSessionPresenter,
  ) {}

  @Get()
  @RequirePermission(Permission.SelfRead)
  @ApiOperation({ summary: "The caller's own user" })
  @ApiScimResponse(USER_SEARCH_DEFINITION, { multiValued: ['x509Certificates'] })
  async get(@CurrentPrincipal() principal: Principal) {
    const linked = await this.self.user(principal);
    // The caller's cached user is serialised once per version (issue 35).
    return serializedOnce(linked, String(linked.user.version), () => this.users.user(linked.user, linked.links));
  }

  @Get('Device')
  @RequirePermission(Permission.SelfDeviceRead)
  @ApiOperation({ summary: "The caller's devices" })
  @ApiScimResponse(DEVICE_SEARCH_DEFINITION, { list: true, multiValued: DEVICE_MULTI_VALUED })
  async listDevices(@CurrentPrincipal() principal: Principal) {
    const views = await this.self.ownDevices(principal);
    return listResponse(
      views.map((view) => this.devices.device(view)),
      views.length,
      { startIndex: 1, count: views.length },
    );
  }

  @Get('Wallet')
  @RequirePermission(Permission.SelfWalletRead)
  @ApiOperation({ summary: "The caller's wallet" })
  @ApiScimResponse(WALLET_SEARCH_DEFINITION, { multiValued: ['devices', 'credentials'] })
  async wallet(@CurrentPrincipal() principal: Principal) {
    return this.wallets.wallet(await this.self.wallet(principal));
  }

  @Post('Device/:id/suspend')
  @Audited('device.suspend', 'credential.suspend', 'certificate.hold', 'crl.publish')
  @HttpCode(200)
  @ScimMediaTypes({ acceptForm: true })
  @RequirePermission(Permission.SelfDeviceAction)
  @ApiOperation({ summary: 'Suspend one of your devices (reason LOST, STOLEN, DAMAGED or FORGOTTEN)' })
  @ApiBody({ schema: { type: 'object', properties: { reason: { type: 'string', enum: ['LOST', 'STOLEN', 'DAMAGED', 'FORGOTTEN'] } }, required: ['reason'] } })
  @ApiScimResponse(DEVICE_SEARCH_DEFINITION, { multiValued: DEVICE_MULTI_VALUED })
  async suspend(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    return this.devices.device(await this.self.move(principal, id, 'suspend', body, actor));
  }

  @Post('Device/:id/resume')
  @Audited('device.resume', 'credential.resume', 'certificate.release', 'crl.publish')
  @HttpCode(200)
  @ScimMediaTypes({ acceptForm: true })
  @RequirePermission(Permission.SelfDeviceAction)
  @ApiOperation({ summary: 'Resume one of your devices, when the wallet policy allows self-service' })
  @ApiScimResponse(DEVICE_SEARCH_DEFINITION, { multiValued: DEVICE_MULTI_VALUED })
  async resume(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    return this.devices.device(await this.self.move(principal, id, 'resume', body, actor));
  }

  @Post('ContentRequest')
  @Audited('content_request.create')
  @RequirePermission(Permission.SelfContentRequestCreate)
  @ApiOperation({ summary: 'Ask for "unlock pin" or "recycle" on one of your own devices' })
  @ApiJsonBody(createContentRequestSchema, {
    schemas: [CONTENT_REQUEST_SCHEMA],
    type: 'unlock pin',
    target: { device: { value: '5b0c7d6e-9a43-4c1f-8a57-2f1e3c4d5a6b' } },
  })
  @ApiScimResponse(CONTENT_REQUEST_SEARCH_DEFINITION, { multiValued: ['parameters'], status: 201 })
  async createRequest(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Body() body: unknown,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const row = await this.self.createRequest(principal, body, actor);
    reply.header('Location', this.requests.location(row.id));
    return this.requests.request(row);
  }

  @Post('ContentRequest/.search')
  @NotAudited('a search (RFC 7644 3.4.3) changes nothing')
  @HttpCode(200)
  @RequirePermission(Permission.SelfContentRequestSearch)
  @ApiSearchBody('status eq "approved"')
  @ApiOperation({ summary: 'Search your own content requests' })
  @ApiScimResponse(CONTENT_REQUEST_SEARCH_DEFINITION, { multiValued: ['parameters'], list: true })
  async searchRequests(@CurrentPrincipal() principal: Principal, @Body() body: unknown) {
    const search = searchFromBody(body, CONTENT_REQUEST_SEARCH_DEFINITION);
    return this.requests.page(await this.self.searchRequests(principal, search), search);
  }

  @Post('ContentRequest/:id/cancel')
  @Audited('content_request.cancel', 'content_request.expire', 'device.update')
  @HttpCode(200)
  @RequirePermission(Permission.SelfContentRequestAction)
  @ApiOperation({ summary: 'Cancel one of your own content requests' })
  @ApiJsonBody(actionSchema)
  @ApiScimResponse(CONTENT_REQUEST_SEARCH_DEFINITION, { multiValued: ['parameters'] })
  async cancelRequest(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    return this.requests.request(await this.self.cancelRequest(principal, id, body, actor));
  }

  @Post('SyncSession')
  @Audited(...SYNC_SESSION_EVENTS)
  @AnswersWithSecrets()
  @RequirePermission(Permission.SelfSyncSessionExecute)
  @ApiOperation({ summary: 'Report what happened on your own card for one of your approved requests (unlock pin, recycle)' })
  @ApiJsonBody(syncSessionSchema, EXAMPLE_SESSION)
  @ApiSchemaResponse(SYNC_SESSION_RESPONSE, 201)
  async syncSession(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Body() body: unknown) {
    return this.sessions.session(await this.self.syncSession(principal, body, actor));
  }

  @Post('Device')
  @NotAudited('not implemented (501): changes nothing')
  @RequirePermission(Permission.SelfDeviceAction)
  @ApiOperation({ summary: 'Not implemented (501)' })
  @ApiResponse({ status: 501, description: 'The interface marks this entry point not implemented; a SCIM error says so.' })
  addDevice(): never {
    notImplemented('POST /Self/Device');
  }

  @Post('Device/:id/Credential')
  @NotAudited('not implemented (501): changes nothing')
  @RequirePermission(Permission.SelfDeviceAction)
  @ApiOperation({ summary: 'Not implemented (501)' })
  @ApiResponse({ status: 501, description: 'The interface marks this entry point not implemented; a SCIM error says so.' })
  addCredential(): never {
    notImplemented('POST /Self/Device/{id}/Credential');
  }

  @Post('DeviceFlow')
  @NotAudited('not implemented (501): changes nothing')
  @RequirePermission(Permission.SelfDeviceAction)
  @ApiOperation({ summary: 'Not implemented (501)' })
  @ApiResponse({ status: 501, description: 'The interface marks this entry point not implemented; a SCIM error says so.' })
  startFlow(): never {
    notImplemented('POST /Self/DeviceFlow');
  }

  @Post('DeviceFlow/:id')
  @NotAudited('not implemented (501): changes nothing')
  @RequirePermission(Permission.SelfDeviceAction)
  @ApiOperation({ summary: 'Not implemented (501)' })
  @ApiResponse({ status: 501, description: 'The interface marks this entry point not implemented; a SCIM error says so.' })
  continueFlow(): never {
    notImplemented('POST /Self/DeviceFlow/{id}');
  }
}
