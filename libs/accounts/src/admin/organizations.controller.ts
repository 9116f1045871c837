import { Audited } from '@app/audit';
import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiOperation, ApiQuery, ApiTags, ApiParam } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  ApiJsonBody,
  ApiPaging,
  CurrentPrincipal,
  readForce,
  listResponse,
  parseBody,
  parsePage,
  Principal,
  RequireAdministrator,
  Actor,
  RequestActor,
  IfMatch,
  IfMatchHeader,
  keepVersion,
} from '@app/common';
import { organizationSettingsSchema } from '../organizations/organization-settings';
import { Organization, OrganizationService } from '../organizations/organization.service';
import { AdminAccessPolicy, AdministeredOrganization } from './admin-access.policy';
import { AdminPresenter } from './admin.presenter';
import { createOrganizationSchema, patchOrganizationSchema } from './admin.schemas';

/** The organization the route names (read by @AdministeredOrganization, so the document declares it here). */
const ORG_PARAM = { name: 'org', description: 'The organization id' };

/** Organizations (DECISIONS 11): the platform administrator manages them; an organization administrator reads and configures its own. */
@ApiTags('administration')
@ApiBearerAuth()
@RequireAdministrator('organization')
@Controller('admin/v1/organizations')
export class OrganizationsController {
  constructor(
    private readonly organizations: OrganizationService,
    private readonly access: AdminAccessPolicy,
    private readonly presenter: AdminPresenter,
  ) {}

  @Post()
  @Audited('organization.create')
  @RequireAdministrator('platform')
  @ApiOperation({ summary: 'Create an organization (platform administrator)' })
  @ApiJsonBody(createOrganizationSchema, { id: 'acme', name: 'Acme Corp', settings: { applicationIdPolicy: 'any' } })
  async create(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Body() body: unknown, @Res({ passthrough: true }) reply: FastifyReply) {
    const input = parseBody(createOrganizationSchema, body);
    const org = await this.organizations.create(input, actor);
    const view = this.presenter.organization(org);
    reply.header('Location', view.meta.location);
    return view;
  }

  @Get()
  @RequireAdministrator('platform')
  @ApiOperation({ summary: 'List organizations (platform administrator)' })
  @ApiPaging()
  async list(@Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    const { rows, total } = await this.organizations.list(page.startIndex - 1, page.count);
    return listResponse(
      rows.map((org) => this.presenter.organization(org)),
      total,
      page,
    );
  }

  @Get(':org')
  @ApiParam(ORG_PARAM)
  @ApiOperation({ summary: 'Read an organization and its settings' })
  get(@AdministeredOrganization() organization: Organization) {
    return this.presenter.organization(organization);
  }

  @Patch(':org')
  @ApiParam(ORG_PARAM)
  @Audited('organization.update', 'organization.settings.update')
  @ApiOperation({ summary: 'Change the name (platform administrator) or some settings of an organization' })
  @ApiJsonBody(patchOrganizationSchema, { name: 'Acme Corporation', settings: { passwordGrant: false } })
  async patch(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Body() body: unknown,
    @Req() request: FastifyRequest,
    @IfMatchHeader() ifMatch: IfMatch | undefined,
  ) {
    const changes = parseBody(patchOrganizationSchema, body);
    // The one admin rule that depends on the body: only the platform administrator renames.
    if (changes.name !== undefined) {
      await this.access.authorize(principal, 'platform', orgId, {
        method: request.method,
        path: request.url.split('?')[0],
        route: request.routeOptions?.url,
        sourceAddress: actor.sourceAddress,
        correlationId: actor.correlationId,
      });
    }
    const org = await this.organizations.update(orgId, changes, actor, 'organization.update', ifMatch);
    return this.presenter.organization(org);
  }

  @Delete(':org')
  @ApiParam(ORG_PARAM)
  @Audited('organization.delete')
  @RequireAdministrator('platform')
  @HttpCode(204)
  @ApiOperation({
    summary: 'Delete an organization (platform administrator)',
    description:
      'Refused with 409 while the organization has system accounts, users or devices, unless force=true, which deletes everything of the organization in one transaction except its audit events. The organization "platform" cannot be deleted.',
  })
  @ApiQuery({ name: 'force', required: false, schema: { type: 'boolean', default: false } })
  async delete(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Query('force') force: unknown,
  ): Promise<void> {
    await this.organizations.delete(orgId, { force: readForce(force) }, actor);
  }

  @Put(':org/settings')
  @Audited('organization.settings.update')
  @HttpCode(200)
  @ApiOperation({
    summary: "Replace an organization's settings",
    description:
      'accessTokenLifetime: 300-86400 seconds, or null for the service default. If-Match (the ETag of GET /organizations/{org}, W/"<version>") makes the change conditional: 412 when the organization changed meanwhile. The answer carries the new ETag.',
  })
  @ApiHeader({ name: 'If-Match', required: false, description: 'W/"<version>" of the organization as read' })
  @ApiJsonBody(organizationSettingsSchema, { automaticDeviceCreation: false, applicationIdPolicy: 'certified', passwordGrant: true, accessTokenLifetime: 900 })
  async putSettings(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @IfMatchHeader() ifMatch: IfMatch | undefined,
    @Body() body: unknown,
  ) {
    const settings = parseBody(organizationSettingsSchema, body, 'settings');
    const org = await this.organizations.update(orgId, { settings }, actor, 'organization.settings.update', ifMatch);
    // The organization's new version rides on the answer (not serialised): the ETag of what was written.
    return keepVersion({ ...org.settings }, org.version);
  }
}
