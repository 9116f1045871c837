import { Audited, NotAudited } from '@app/audit';
import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Permission } from '@app/auth';
import { USER_SEARCH_DEFINITION, UserRow } from '@app/accounts';
import {
  Actor,
  ApiJsonBody,
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
  listResponse,
  projectResource,
  projectionFromQuery,
  readForce,
  searchFromBody,
  searchFromQuery,
  serializedOnce,
  ScimSearch,
  ApiScimResponse,
  ApiSearchBody,
} from '@app/common';
import { ScimUserService } from './scim-user.service';
import { UserPresenter } from './user.presenter';
import { CMS_USER_SCHEMA, ENTERPRISE_USER_SCHEMA, USER_PERMISSION_SCHEMA, userBodySchema } from './user.schema';

/** The User answer: the attributes searches declare, the multi-valued ones as arrays, and both extensions. */
const USER_RESPONSE = {
  multiValued: ['x509Certificates'],
  extra: {
    [ENTERPRISE_USER_SCHEMA]: { type: 'object' as const, description: 'RFC 7643 4.3 enterprise extension, when the user has one' },
    [USER_PERMISSION_SCHEMA]: { type: 'object' as const, description: '{roles, groups}, on operators' },
  },
};

const EXAMPLE_USER = {
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:User', CMS_USER_SCHEMA],
  userName: 'jane.doe',
  externalId: '5a1f3c',
  name: { givenName: 'Jane', familyName: 'Doe' },
  displayName: 'Jane Doe',
  emails: [{ value: 'jane.doe@example.com', type: 'work', primary: true }],
  active: true,
};

/**
 * Users over SCIM (CREDENTIAL-MANAGEMENT.md "Users"; DECISIONS 5.2 for the permissions: creating,
 * listing, replacing and deleting users are the Configuration Operator's operator.* permissions;
 * reading one and `.search` are the user directory's). Each handler unpacks, calls one service
 * method and presents.
 */
@ApiTags('credential management: users')
@ApiBearerAuth()
@ScimMediaTypes()
@PathFormats({ id: 'uuid' })
@Controller(credentialManagementPaths('Users'))
export class UsersController {
  constructor(
    private readonly users: ScimUserService,
    private readonly presenter: UserPresenter,
  ) {}

  @Post()
  @Audited('user.create')
  @RequirePermission(Permission.OperatorCreate)
  @ApiOperation({ summary: 'Create a cardholder (default) or an operator; its wallet is created with it' })
  @ApiJsonBody(userBodySchema, EXAMPLE_USER)
  @ApiScimResponse(USER_SEARCH_DEFINITION, { ...USER_RESPONSE, status: 201 })
  async create(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Body() body: unknown, @Res({ passthrough: true }) reply: FastifyReply) {
    const user = await this.users.create(principal, body, actor);
    reply.header('Location', this.presenter.location(user.id));
    return (await this.present(principal.org, [user]))[0];
  }

  @Get()
  @RequirePermission(Permission.OperatorList)
  @ApiOperation({ summary: 'List users: filter, startIndex, count, sortBy, sortOrder, attributes, excludedAttributes (RFC 7644 3.4.2)' })
  @ApiQuery({ name: 'filter', required: false, example: 'userName eq "jane.doe"' })
  @ApiScimResponse(USER_SEARCH_DEFINITION, { ...USER_RESPONSE, list: true })
  async list(@CurrentPrincipal() principal: Principal, @Query() query: Record<string, unknown>) {
    return this.page(principal, searchFromQuery(query, USER_SEARCH_DEFINITION));
  }

  @Post('.search')
  @NotAudited('a search (RFC 7644 3.4.3) changes nothing')
  @HttpCode(200)
  @RequirePermission(Permission.UserSearch)
  @ApiSearchBody('userName eq "jane.doe"')
  @ApiOperation({ summary: 'Search users with a SCIM SearchRequest' })
  @ApiScimResponse(USER_SEARCH_DEFINITION, { ...USER_RESPONSE, list: true })
  async search(@CurrentPrincipal() principal: Principal, @Body() body: unknown) {
    return this.page(principal, searchFromBody(body, USER_SEARCH_DEFINITION));
  }

  @Get(':id')
  @RequirePermission(Permission.UserRead)
  @ApiOperation({ summary: 'Read a user' })
  @ApiScimResponse(USER_SEARCH_DEFINITION, USER_RESPONSE)
  async get(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Query() query: Record<string, unknown>) {
    const projection = projectionFromQuery(query, USER_SEARCH_DEFINITION);
    const linked = await this.users.read(principal, id);
    const { user, links } = linked;
    // The whole resource of a cached user is serialised once per version (issue 35).
    if (!projection.attributes && !projection.excludedAttributes) return serializedOnce(linked, String(user.version), () => this.presenter.user(user, links));
    return projectResource(this.presenter.user(user, links), USER_SEARCH_DEFINITION, projection);
  }

  @Put(':id')
  @Audited('user.update')
  @RequirePermission(Permission.OperatorCreate)
  @ApiOperation({
    summary: 'Replace a user',
    description: 'Attributes left out are cleared, except active, password, the role and groups, which keep their values.',
  })
  @ApiJsonBody(userBodySchema, EXAMPLE_USER)
  @ApiScimResponse(USER_SEARCH_DEFINITION, USER_RESPONSE)
  async replace(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('id') id: string,
    @Body() body: unknown,
    @IfMatchHeader() ifMatch: IfMatch | undefined,
  ) {
    const user = await this.users.replace(principal, id, body, actor, ifMatch);
    return (await this.present(principal.org, [user]))[0];
  }

  @Patch(':id')
  @Audited('user.update')
  @RequirePermission(Permission.OperatorCreate)
  @ApiOperation({ summary: 'Change a user with RFC 7644 PatchOp operations (add, replace, remove; with or without path)' })
  @ApiBody({
    schema: {
      type: 'object',
      required: ['schemas', 'Operations'],
      properties: {
        schemas: { type: 'array', items: { type: 'string', enum: [PATCH_OP_SCHEMA] } },
        Operations: {
          type: 'array',
          items: {
            type: 'object',
            required: ['op'],
            properties: { op: { type: 'string', enum: ['add', 'replace', 'remove'] }, path: { type: 'string' }, value: {} },
          },
        },
      },
      example: { schemas: [PATCH_OP_SCHEMA], Operations: [{ op: 'replace', path: 'active', value: false }] },
    },
  })
  @ApiScimResponse(USER_SEARCH_DEFINITION, USER_RESPONSE)
  async patch(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('id') id: string,
    @Body() body: unknown,
    @IfMatchHeader() ifMatch: IfMatch | undefined,
  ) {
    const user = await this.users.patch(principal, id, body, actor, ifMatch);
    return (await this.present(principal.org, [user]))[0];
  }

  @Delete(':id')
  @Audited('user.delete', 'device.terminate', 'device.update', 'credential.revoke', 'certificate.revoke', 'crl.publish')
  @HttpCode(204)
  @RequirePermission(Permission.OperatorDelete)
  @ApiOperation({
    summary: 'Delete a user',
    description: '409 while the user holds devices that are not TERMINATED, unless force=true, which terminates them first.',
  })
  @ApiQuery({ name: 'force', required: false, schema: { type: 'boolean', default: false } })
  async remove(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Param('id') id: string, @Query('force') force: unknown): Promise<void> {
    await this.users.delete(principal, id, readForce(force), actor);
  }

  private async page(principal: Principal, search: ScimSearch) {
    const { rows, total } = await this.users.search(principal, search);
    return listResponse(
      rows.map(({ user, links }) => projectResource(this.presenter.user(user, links), USER_SEARCH_DEFINITION, search)),
      total,
      search.page,
    );
  }

  private async present(orgId: string, rows: UserRow[]) {
    const links = await this.users.links(orgId, rows);
    return rows.map((row) => this.presenter.user(row, links(row)));
  }
}
