import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Audited, NotAudited } from '@app/audit';
import { Permission } from '@app/auth';
import {
  Actor,
  AnswersWithSecrets,
  ApiJsonBody,
  ApiSchemaResponse,
  ApiScimResponse,
  ApiSearchBody,
  AuthorizedBy,
  CurrentPrincipal,
  IfMatch,
  IfMatchHeader,
  PATCH_OP_SCHEMA,
  PathFormats,
  Principal,
  RequestActor,
  RequirePermission,
  ScimMediaTypes,
  credentialManagementPaths,
  projectResource,
  projectionFromQuery,
  searchFromBody,
} from '@app/common';
import { ContentRequestAction } from './content-request-lifecycle';
import { ContentRequestPresenter } from './content-request.presenter';
import { CONTENT_REQUEST_SCHEMA, CONTENT_REQUEST_SEARCH_DEFINITION, actionSchema, createContentRequestSchema } from './content-request.schema';
import { ContentRequestService } from './content-request.service';

const RESPONSE = { multiValued: ['parameters'] };
export const EXAMPLE_REQUEST = {
  schemas: [CONTENT_REQUEST_SCHEMA],
  type: 'issuance',
  target: { device: { value: '5b0c7d6e-9a43-4c1f-8a57-2f1e3c4d5a6b' }, devicePolicy: { value: '0e7c2b1a-4d3f-4b6a-9c8d-7e6f5a4b3c2d' } },
  wallet: { value: 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d' },
  reason: 'NONE',
};

/**
 * The ContentRequest resource (CREDENTIAL-MANAGEMENT.md "ContentRequest lifecycle"; DECISIONS 5.2:
 * creating needs the permission of the request's type, which the service checks once it has read
 * the body; reading one is a search's permission).
 */
@ApiTags('credential management: content requests')
@ApiBearerAuth()
@PathFormats({ id: 'uuid' })
@Controller(credentialManagementPaths('ContentRequest'))
export class ContentRequestsController {
  constructor(
    private readonly requests: ContentRequestService,
    private readonly presenter: ContentRequestPresenter,
  ) {}

  @Post()
  @Audited('content_request.create', 'device.assign')
  @ScimMediaTypes()
  @AuthorizedBy(
    "the permission of the request's type: contentRequest.issuance.create (issuance, produce, update), contentRequest.recycle.create, contentRequest.unlockPin.create",
  )
  @ApiOperation({ summary: 'Create a content request (issuance, produce, recycle, unlock pin, update) for a target device' })
  @ApiJsonBody(createContentRequestSchema, EXAMPLE_REQUEST)
  @ApiScimResponse(CONTENT_REQUEST_SEARCH_DEFINITION, { ...RESPONSE, status: 201 })
  // An offline PIN unlock answers its response here, once (DECISIONS 17.1): no cache may keep it.
  @AnswersWithSecrets()
  async create(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Body() body: unknown, @Res({ passthrough: true }) reply: FastifyReply) {
    const row = await this.requests.create(principal, body, actor);
    reply.header('Location', this.presenter.location(row.id));
    return this.presenter.request(row);
  }

  @Post('validate')
  @NotAudited('a prediction: stores nothing')
  @HttpCode(200)
  @ScimMediaTypes()
  @RequirePermission(Permission.ContentRequestValidate)
  @ApiOperation({ summary: 'The end state an update request would reach (device status, credentials), without storing anything' })
  @ApiJsonBody(createContentRequestSchema, { ...EXAMPLE_REQUEST, type: 'update' })
  @ApiSchemaResponse({
    type: 'object',
    properties: {
      device: { type: 'object', properties: { value: { type: 'string' }, status: { type: 'string' } } },
      credentials: { type: 'array', items: { type: 'object', properties: { type: { type: 'string' }, status: { type: 'string' } } } },
    },
  })
  validate(@CurrentPrincipal() principal: Principal, @Body() body: unknown) {
    return this.requests.validate(principal, body);
  }

  @Post('.search')
  @NotAudited('a search (RFC 7644 3.4.3) changes nothing')
  @HttpCode(200)
  @ScimMediaTypes()
  @RequirePermission(Permission.ContentRequestSearch)
  @ApiSearchBody('status eq "requested" and target.device.value eq "5b0c7d6e-9a43-4c1f-8a57-2f1e3c4d5a6b"')
  @ApiOperation({ summary: 'Search content requests (type, status, wallet.value, target.device.value, requestedBy, approvedBy, meta.created, expiresAt)' })
  @ApiScimResponse(CONTENT_REQUEST_SEARCH_DEFINITION, { ...RESPONSE, list: true })
  async search(@CurrentPrincipal() principal: Principal, @Body() body: unknown) {
    const search = searchFromBody(body, CONTENT_REQUEST_SEARCH_DEFINITION);
    return this.presenter.page(await this.requests.search(principal, search), search);
  }

  @Get(':id')
  @ScimMediaTypes()
  @RequirePermission(Permission.ContentRequestSearch)
  @ApiOperation({ summary: 'Read a content request (an open one past its expiresAt is expired first)' })
  @ApiScimResponse(CONTENT_REQUEST_SEARCH_DEFINITION, RESPONSE)
  async get(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Query() query: Record<string, unknown>) {
    const projection = projectionFromQuery(query, CONTENT_REQUEST_SEARCH_DEFINITION);
    return projectResource(this.presenter.request(await this.requests.get(principal, id)), CONTENT_REQUEST_SEARCH_DEFINITION, projection);
  }

  @Patch(':id')
  @Audited('content_request.update', 'content_request.expire', 'device.update')
  @ScimMediaTypes()
  @RequirePermission(Permission.ContentRequestUpdate)
  @ApiOperation({ summary: 'Change reason, parameters or expiresAt (earlier only) of a requested content request (RFC 7644 PatchOp)' })
  @ApiBody({ schema: { type: 'object', example: { schemas: [PATCH_OP_SCHEMA], Operations: [{ op: 'replace', path: 'reason', value: 'DAMAGED' }] } } })
  @ApiScimResponse(CONTENT_REQUEST_SEARCH_DEFINITION, RESPONSE)
  async patch(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('id') id: string,
    @Body() body: unknown,
    @IfMatchHeader() ifMatch: IfMatch | undefined,
  ) {
    return this.presenter.request(await this.requests.patch(principal, id, body, actor, ifMatch));
  }

  @Delete(':id')
  @Audited('content_request.cancel', 'content_request.expire', 'device.update')
  @HttpCode(204)
  @RequirePermission(Permission.ContentRequestDelete)
  @ApiOperation({ summary: 'Cancel a content request (requested, approved or failed); its device goes back to stock' })
  async remove(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Param('id') id: string): Promise<void> {
    await this.requests.act(principal, id, 'delete', undefined, actor);
  }

  @Post(':id/approve')
  @Audited('content_request.approve', 'content_request.expire', 'device.update')
  @HttpCode(200)
  @ScimMediaTypes()
  @RequirePermission(Permission.ContentRequestAction)
  @ApiOperation({ summary: 'Approve a requested content request: the approver is neither its requester nor the wallet owner' })
  @ApiJsonBody(actionSchema)
  @ApiScimResponse(CONTENT_REQUEST_SEARCH_DEFINITION, RESPONSE)
  approve(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    return this.act(principal, actor, id, 'approve', body);
  }

  @Post(':id/deny')
  @Audited('content_request.deny', 'content_request.expire', 'device.update')
  @HttpCode(200)
  @ScimMediaTypes()
  @RequirePermission(Permission.ContentRequestAction)
  @ApiOperation({ summary: 'Deny a requested content request; its device goes back to stock' })
  @ApiJsonBody(actionSchema)
  @ApiScimResponse(CONTENT_REQUEST_SEARCH_DEFINITION, RESPONSE)
  deny(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    return this.act(principal, actor, id, 'deny', body);
  }

  @Post(':id/cancel')
  @Audited('content_request.cancel', 'content_request.expire', 'device.update')
  @HttpCode(200)
  @ScimMediaTypes()
  @RequirePermission(Permission.ContentRequestAction)
  @ApiOperation({ summary: 'Cancel a content request (requested, approved or failed); its device goes back to stock' })
  @ApiJsonBody(actionSchema)
  @ApiScimResponse(CONTENT_REQUEST_SEARCH_DEFINITION, RESPONSE)
  cancel(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    return this.act(principal, actor, id, 'cancel', body);
  }

  @Post(':id/retry')
  @Audited('content_request.retry', 'content_request.expire', 'device.update')
  @HttpCode(200)
  @ScimMediaTypes()
  @RequirePermission(Permission.ContentRequestAction)
  @ApiOperation({ summary: 'Retry a failed content request: approved again, its failure cleared' })
  @ApiJsonBody(actionSchema)
  @ApiScimResponse(CONTENT_REQUEST_SEARCH_DEFINITION, RESPONSE)
  retry(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    return this.act(principal, actor, id, 'retry', body);
  }

  private async act(principal: Principal, actor: Actor, id: string, action: ContentRequestAction, body: unknown) {
    return this.presenter.request(await this.requests.act(principal, id, action, body, actor));
  }
}
