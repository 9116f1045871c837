import { Audited } from '@app/audit';
import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { OperatorDependentPolicy, Permission } from '@app/auth';
import {
  Actor,
  ApiJsonBody,
  CurrentPrincipal,
  PathFormats,
  Principal,
  RequestActor,
  RequireAdministrator,
  RequirePermission,
  ScimMediaTypes,
  credentialManagementPaths,
  listResponse,
  projectResource,
  projectionFromQuery,
  searchFromQuery,
  ApiScimResponse,
  ApiPaging,
  IfMatch,
  IfMatchHeader,
} from '@app/common';
import { GroupPresenter } from './group.presenter';
import { GROUP_SEARCH_DEFINITION, createGroupSchema, patchGroupSchema } from './group.schema';
import { GroupService } from './group.service';

/** GET /Groups (filter on displayName) and GET /Groups/{id} (DECISIONS 5.2: group.read). */
@ApiTags('credential management: groups')
@ApiBearerAuth()
@ScimMediaTypes()
@PathFormats({ id: 'uuid' })
@Controller(credentialManagementPaths('Groups'))
export class GroupsController {
  constructor(
    private readonly groups: GroupService,
    private readonly presenter: GroupPresenter,
    private readonly operatorDependent: OperatorDependentPolicy,
  ) {}

  @Get()
  @RequirePermission(Permission.GroupRead)
  @ApiOperation({ summary: 'List groups with their members (filter, paging, sorting, attributes)' })
  @ApiQuery({ name: 'filter', required: false, example: 'displayName eq "Berlin"' })
  @ApiScimResponse(GROUP_SEARCH_DEFINITION, { multiValued: ['members'], list: true })
  async list(@CurrentPrincipal() principal: Principal, @Query() query: Record<string, unknown>) {
    const search = searchFromQuery(query, GROUP_SEARCH_DEFINITION);
    const { views, total } = await this.groups.search(principal.org, search, this.operatorDependent.groupsOf(principal));
    return listResponse(
      views.map((view) => projectResource(this.presenter.group(view), GROUP_SEARCH_DEFINITION, search)),
      total,
      search.page,
    );
  }

  @Get(':id')
  @RequirePermission(Permission.GroupRead)
  @ApiOperation({ summary: 'Read a group' })
  @ApiScimResponse(GROUP_SEARCH_DEFINITION, { multiValued: ['members'] })
  async get(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Query() query: Record<string, unknown>) {
    const projection = projectionFromQuery(query, GROUP_SEARCH_DEFINITION);
    return projectResource(
      this.presenter.group(await this.groups.get(principal.org, id, this.operatorDependent.groupsOf(principal))),
      GROUP_SEARCH_DEFINITION,
      projection,
    );
  }
}

/** The administrator's side: groups with their members (CREDENTIAL-MANAGEMENT.md "Reference data"). */
@ApiTags('administration: credential management')
@ApiBearerAuth()
@RequireAdministrator('organization')
@PathFormats({ id: 'uuid' })
@Controller('admin/v1/organizations/:org/groups')
export class GroupAdminController {
  constructor(
    private readonly groups: GroupService,
    private readonly presenter: GroupPresenter,
  ) {}

  @Post()
  @Audited('group.create')
  @ApiOperation({ summary: 'Create a group, optionally with its members (user ids)' })
  @ApiJsonBody(createGroupSchema, { displayName: 'Berlin', members: ['7d444840-9dc0-11d1-b245-5ffdce74fad2'] })
  @ApiScimResponse(GROUP_SEARCH_DEFINITION, { multiValued: ['members'], status: 201 })
  async create(@RequestActor() actor: Actor, @Param('org') orgId: string, @Body() body: unknown, @Res({ passthrough: true }) reply: FastifyReply) {
    const view = this.presenter.group(await this.groups.create(orgId, body, actor));
    reply.header('Location', view.meta.location);
    return view;
  }

  @Get()
  @ApiOperation({ summary: 'List the groups' })
  @ApiPaging()
  @ApiQuery({ name: 'filter', required: false, example: 'displayName sw "Ber"' })
  @ApiScimResponse(GROUP_SEARCH_DEFINITION, { multiValued: ['members'], list: true })
  async list(@Param('org') orgId: string, @Query() query: Record<string, unknown>) {
    const search = searchFromQuery(query, GROUP_SEARCH_DEFINITION);
    const { views, total } = await this.groups.search(orgId, search);
    return listResponse(
      views.map((view) => this.presenter.group(view)),
      total,
      search.page,
    );
  }

  @Get(':id')
  @ApiOperation({ summary: 'Read a group' })
  @ApiScimResponse(GROUP_SEARCH_DEFINITION, { multiValued: ['members'] })
  async get(@Param('org') orgId: string, @Param('id') id: string) {
    return this.presenter.group(await this.groups.get(orgId, id));
  }

  @Patch(':id')
  @Audited('group.update')
  @ApiOperation({ summary: 'Rename a group and/or replace its members', description: 'members is the whole list: users left out leave the group.' })
  @ApiJsonBody(patchGroupSchema, { displayName: 'Berlin Mitte' })
  @ApiScimResponse(GROUP_SEARCH_DEFINITION, { multiValued: ['members'] })
  async update(
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Param('id') id: string,
    @Body() body: unknown,
    @IfMatchHeader() ifMatch: IfMatch | undefined,
  ) {
    return this.presenter.group(await this.groups.update(orgId, id, body, actor, ifMatch));
  }

  @Delete(':id')
  @Audited('group.delete')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a group', description: 'Its members leave it; device policies that named it no longer do.' })
  async remove(
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Param('id') id: string,
    @IfMatchHeader() ifMatch: IfMatch | undefined,
  ): Promise<void> {
    await this.groups.delete(orgId, id, actor, ifMatch);
  }
}
