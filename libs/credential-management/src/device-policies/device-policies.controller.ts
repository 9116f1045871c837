import { Audited, NotAudited } from '@app/audit';
import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Permission } from '@app/auth';
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
  searchFromBody,
  searchFromQuery,
  ApiScimResponse,
  ApiSearchBody,
  ApiPaging,
  IfMatch,
  IfMatchHeader,
} from '@app/common';
import { DevicePolicyPresenter } from './device-policy.presenter';
import { CREDENTIAL_TYPES, DEVICE_POLICY_SEARCH_DEFINITION, createDevicePolicySchema, patchDevicePolicySchema } from './device-policy.schema';

/**
 * deviceTypes and credentialTypes are answered as arrays of strings (DevicePolicyPresenter); a
 * filter reaches them as `deviceTypes.value`, which is how the search definition declares them.
 */
const ANSWERED = {
  extra: {
    deviceTypes: { type: 'array' as const, items: { type: 'string' as const } },
    credentialTypes: { type: 'array' as const, items: { type: 'string' as const, enum: [...CREDENTIAL_TYPES] } },
  },
};
import { DevicePolicyService } from './device-policy.service';

/** GET /DevicePolicy/{id} and POST /DevicePolicy/.search (DECISIONS 5.2: devicePolicy.read, devicePolicy.search). */
@ApiTags('credential management: device policies')
@ApiBearerAuth()
@ScimMediaTypes()
@PathFormats({ id: 'uuid' })
@Controller(credentialManagementPaths('DevicePolicy'))
export class DevicePolicyController {
  constructor(
    private readonly policies: DevicePolicyService,
    private readonly presenter: DevicePolicyPresenter,
  ) {}

  @Post('.search')
  @NotAudited('a search (RFC 7644 3.4.3) changes nothing')
  @HttpCode(200)
  @RequirePermission(Permission.DevicePolicySearch)
  @ApiSearchBody('credentialTypes.value eq "PKI_CERTIFICATE"')
  @ApiOperation({ summary: 'Search device policies with a SCIM SearchRequest' })
  @ApiScimResponse(DEVICE_POLICY_SEARCH_DEFINITION, { ...ANSWERED, list: true })
  async search(@CurrentPrincipal() principal: Principal, @Body() body: unknown) {
    const search = searchFromBody(body, DEVICE_POLICY_SEARCH_DEFINITION);
    const { rows, total } = await this.policies.search(principal.org, search);
    return listResponse(
      rows.map((row) => projectResource(this.presenter.policy(row), DEVICE_POLICY_SEARCH_DEFINITION, search)),
      total,
      search.page,
    );
  }

  @Get(':id')
  @RequirePermission(Permission.DevicePolicyRead)
  @ApiOperation({ summary: 'Read a device policy' })
  @ApiScimResponse(DEVICE_POLICY_SEARCH_DEFINITION, ANSWERED)
  async get(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Query() query: Record<string, unknown>) {
    const projection = projectionFromQuery(query, DEVICE_POLICY_SEARCH_DEFINITION);
    return projectResource(this.presenter.policy(await this.policies.get(principal.org, id)), DEVICE_POLICY_SEARCH_DEFINITION, projection);
  }
}

/** The administrator's side (CREDENTIAL-MANAGEMENT.md "Reference data"). */
@ApiTags('administration: credential management')
@ApiBearerAuth()
@RequireAdministrator('organization')
@PathFormats({ id: 'uuid' })
@Controller('admin/v1/organizations/:org/device-policies')
export class DevicePolicyAdminController {
  constructor(
    private readonly policies: DevicePolicyService,
    private readonly presenter: DevicePolicyPresenter,
  ) {}

  @Post()
  @Audited('device_policy.create')
  @ApiOperation({ summary: 'Create a device policy' })
  @ApiJsonBody(createDevicePolicySchema, {
    name: 'Employee badge',
    deviceTypes: ['IDPrime 940'],
    credentialTypes: ['PKI_CERTIFICATE'],
    groups: [],
    requiresApproval: true,
  })
  @ApiScimResponse(DEVICE_POLICY_SEARCH_DEFINITION, { ...ANSWERED, status: 201 })
  async create(@RequestActor() actor: Actor, @Param('org') orgId: string, @Body() body: unknown, @Res({ passthrough: true }) reply: FastifyReply) {
    const view = this.presenter.policy(await this.policies.create(orgId, body, actor));
    reply.header('Location', view.meta.location);
    return view;
  }

  @Get()
  @ApiOperation({ summary: 'List the device policies' })
  @ApiPaging()
  @ApiQuery({ name: 'filter', required: false, example: 'credentialTypes.value eq "OATH_TOTP"' })
  @ApiScimResponse(DEVICE_POLICY_SEARCH_DEFINITION, { ...ANSWERED, list: true })
  async list(@Param('org') orgId: string, @Query() query: Record<string, unknown>) {
    const search = searchFromQuery(query, DEVICE_POLICY_SEARCH_DEFINITION);
    const { rows, total } = await this.policies.search(orgId, search);
    return listResponse(
      rows.map((row) => this.presenter.policy(row)),
      total,
      search.page,
    );
  }

  @Get(':id')
  @ApiOperation({ summary: 'Read a device policy' })
  @ApiScimResponse(DEVICE_POLICY_SEARCH_DEFINITION, ANSWERED)
  async get(@Param('org') orgId: string, @Param('id') id: string) {
    return this.presenter.policy(await this.policies.get(orgId, id));
  }

  @Patch(':id')
  @Audited('device_policy.update')
  @ApiOperation({ summary: 'Change a device policy' })
  @ApiJsonBody(patchDevicePolicySchema, { requiresApproval: false })
  @ApiScimResponse(DEVICE_POLICY_SEARCH_DEFINITION, ANSWERED)
  async update(
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Param('id') id: string,
    @Body() body: unknown,
    @IfMatchHeader() ifMatch: IfMatch | undefined,
  ) {
    return this.presenter.policy(await this.policies.update(orgId, id, body, actor, ifMatch));
  }

  @Delete(':id')
  @Audited('device_policy.delete')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a device policy' })
  async remove(
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Param('id') id: string,
    @IfMatchHeader() ifMatch: IfMatch | undefined,
  ): Promise<void> {
    await this.policies.delete(orgId, id, actor, ifMatch);
  }
}
