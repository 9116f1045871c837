import { Audited, NotAudited } from '@app/audit';
import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Permission } from '@app/auth';
import {
  CurrentPrincipal,
  Principal,
  RequirePermission,
  ScimMediaTypes,
  listResponse,
  projectResource,
  projectionFromQuery,
  searchFromBody,
  serializedOnce,
  Actor,
  RequestActor,
  PathFormats,
  credentialManagementPaths,
  ApiSearchBody,
  ApiScimResponse,
  ApiJsonBody,
  ScimResponseOptions,
} from '@app/common';
import { DevicePresenter, DeviceResource } from '../device.presenter';
import { DEVICE_MULTI_VALUED, DEVICE_SEARCH_DEFINITION, deviceActionSchema, parseActionBody } from '../device.schema';
import { DeviceService } from '../device.service';
import { DeviceAction } from '../lifecycle/device-lifecycle';

/** The canonical path, the `scm` alias and the customer form (DECISIONS 1). */
export const DEVICE_PATHS = credentialManagementPaths('Device');

/** Every answer that shows a device, in the OpenAPI document. */
const DEVICE_ANSWER: ScimResponseOptions = { multiValued: DEVICE_MULTI_VALUED };

/**
 * The Device entry points (interface "Credential-management REST API entry points"; DECISIONS 5.2
 * for the permissions, 8 for the rules). Each handler unpacks, calls one service method and shapes
 * the answer.
 */
@ApiTags('devices')
@ApiBearerAuth()
@PathFormats({ id: 'uuid' })
@Controller(DEVICE_PATHS)
export class DeviceController {
  constructor(
    private readonly devices: DeviceService,
    private readonly presenter: DevicePresenter,
  ) {}

  @Post()
  @Audited('device.create')
  @ScimMediaTypes()
  @RequirePermission(Permission.DeviceCreate)
  @ApiScimResponse(DEVICE_SEARCH_DEFINITION, { ...DEVICE_ANSWER, status: 201 })
  async create(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Body() body: unknown, @Res({ passthrough: true }) reply: FastifyReply) {
    const resource = this.presenter.device(await this.devices.create(principal, body, actor));
    reply.header('Location', resource.meta.location);
    return resource;
  }

  @Post('.search')
  @NotAudited('a search (RFC 7644 3.4.3) changes nothing')
  @HttpCode(200)
  @ScimMediaTypes()
  @ApiSearchBody('status.status eq "AVAILABLE"')
  @RequirePermission(Permission.DeviceSearch)
  @ApiScimResponse(DEVICE_SEARCH_DEFINITION, { ...DEVICE_ANSWER, list: true })
  async search(@CurrentPrincipal() principal: Principal, @Body() body: unknown) {
    const search = searchFromBody(body, DEVICE_SEARCH_DEFINITION);
    const { views, total } = await this.devices.search(principal, search);
    return listResponse(
      views.map((view) => projectResource(this.presenter.device(view), DEVICE_SEARCH_DEFINITION, search)),
      total,
      search.page,
    );
  }

  @Get(':id')
  @ScimMediaTypes()
  @RequirePermission(Permission.DeviceRead)
  @ApiScimResponse(DEVICE_SEARCH_DEFINITION, DEVICE_ANSWER)
  async get(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Query() query: Record<string, unknown>) {
    const projection = projectionFromQuery(query, DEVICE_SEARCH_DEFINITION);
    const view = await this.devices.get(principal, id);
    // The whole resource of a cached device is serialised once per version (issue 35).
    if (!projection.attributes && !projection.excludedAttributes) return serializedOnce(view, String(view.row.version), () => this.presenter.device(view));
    return projectResource(this.presenter.device(view), DEVICE_SEARCH_DEFINITION, projection);
  }

  @Delete(':id')
  @Audited('device.delete')
  @HttpCode(204)
  @RequirePermission(Permission.DeviceDelete)
  async remove(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Param('id') id: string): Promise<void> {
    await this.devices.act(principal, id, 'delete', undefined, actor);
  }

  @Post(':id/activate')
  @ApiJsonBody(deviceActionSchema, { reason: 'LOST' })
  @Audited('device.activate', 'credential.resume', 'certificate.release', 'crl.publish')
  @HttpCode(200)
  @ScimMediaTypes({ acceptForm: true })
  @RequirePermission(Permission.DeviceActivate)
  @ApiScimResponse(DEVICE_SEARCH_DEFINITION, DEVICE_ANSWER)
  activate(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    return this.move(principal, actor, id, 'activate', body);
  }

  @Post(':id/suspend')
  @ApiJsonBody(deviceActionSchema, { reason: 'LOST' })
  @Audited('device.suspend', 'credential.suspend', 'certificate.hold', 'crl.publish')
  @HttpCode(200)
  @ScimMediaTypes({ acceptForm: true })
  @RequirePermission(Permission.DeviceSuspend)
  @ApiScimResponse(DEVICE_SEARCH_DEFINITION, DEVICE_ANSWER)
  suspend(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    return this.move(principal, actor, id, 'suspend', body);
  }

  @Post(':id/resume')
  @ApiJsonBody(deviceActionSchema, { reason: 'LOST' })
  @Audited('device.resume', 'credential.resume', 'certificate.release', 'crl.publish')
  @HttpCode(200)
  @ScimMediaTypes({ acceptForm: true })
  @RequirePermission(Permission.DeviceResume)
  @ApiScimResponse(DEVICE_SEARCH_DEFINITION, DEVICE_ANSWER)
  resume(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    return this.move(principal, actor, id, 'resume', body);
  }

  @Post(':id/revoke')
  @ApiJsonBody(deviceActionSchema, { reason: 'LOST' })
  @Audited('device.revoke', 'credential.revoke', 'certificate.revoke', 'crl.publish')
  @HttpCode(200)
  @ScimMediaTypes({ acceptForm: true })
  @RequirePermission(Permission.DeviceRevoke)
  @ApiScimResponse(DEVICE_SEARCH_DEFINITION, DEVICE_ANSWER)
  revoke(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    return this.move(principal, actor, id, 'revoke', body);
  }

  @Post(':id/terminate')
  @ApiJsonBody(deviceActionSchema, { reason: 'LOST' })
  @Audited('device.terminate', 'credential.revoke', 'certificate.revoke', 'crl.publish')
  @HttpCode(200)
  @ScimMediaTypes({ acceptForm: true })
  @RequirePermission(Permission.DeviceTerminate)
  @ApiScimResponse(DEVICE_SEARCH_DEFINITION, DEVICE_ANSWER)
  terminate(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    return this.move(principal, actor, id, 'terminate', body);
  }

  /** Updates answer 200 with the whole updated resource (DECISIONS 7). */
  private async move(principal: Principal, actor: Actor, id: string, action: DeviceAction, body: unknown): Promise<DeviceResource> {
    const view = (await this.devices.act(principal, id, action, parseActionBody(body), actor))!;
    return this.presenter.device(view);
  }
}
