import { Body, Controller, Get, HttpCode, Param, Patch, Post, Put, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AuthorizedBy, CurrentPrincipal, ORG_ID_PATTERN, Principal, SourceAddress, listResponse, parseBody, parsePage, z } from '@app/common';
import { AuditService } from '../audit/audit.service';
import { organizationSettingsSchema } from '../organizations/organization-settings';
import { OrganizationService, toOrganization } from '../organizations/organization.service';
import { OrganizationRepository } from '../organizations/organization.repository';
import { AdminAccessPolicy } from './admin-access.policy';
import { AdminPresenter } from './admin.presenter';

const createOrganizationSchema = z
  .object({
    id: z.string().regex(ORG_ID_PATTERN, 'must be 1-64 characters of A-Z, a-z, 0-9 and _ (no hyphen: it separates organization and suffix in a Client ID)'),
    name: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
    settings: organizationSettingsSchema.partial().optional(),
  })
  .strict();

const patchOrganizationSchema = z
  .object({
    name: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters').optional(),
    settings: organizationSettingsSchema.partial().optional(),
  })
  .strict();

@ApiTags('administration')
@ApiBearerAuth()
@AuthorizedBy('administrator')
@Controller('admin/v1/organizations')
export class OrganizationsController {
  constructor(
    private readonly organizations: OrganizationService,
    private readonly repository: OrganizationRepository,
    private readonly access: AdminAccessPolicy,
    private readonly audit: AuditService,
    private readonly presenter: AdminPresenter,
  ) {}

  @Post()
  async create(@CurrentPrincipal() principal: Principal, @SourceAddress() source: string, @Body() body: unknown, @Res({ passthrough: true }) reply: FastifyReply) {
    this.access.requirePlatformAdministrator(principal);
    const input = parseBody(createOrganizationSchema, body);
    const org = await this.organizations.create(input);
    await this.audit.record({ org: org.id, actor: principal.name, action: 'organization.create', target: org.id, outcome: 'success', sourceAddress: source });
    const view = this.presenter.organization(org);
    reply.header('Location', view.meta.location);
    return view;
  }

  @Get()
  async list(@CurrentPrincipal() principal: Principal, @Query() query: Record<string, unknown>) {
    this.access.requirePlatformAdministrator(principal);
    const page = parsePage(query);
    const { rows, total } = await this.repository.list(page.startIndex - 1, page.count);
    return listResponse(rows.map((r) => this.presenter.organization(toOrganization(r))), total, page);
  }

  @Get(':org')
  async get(@CurrentPrincipal() principal: Principal, @Param('org') orgId: string) {
    return this.presenter.organization(await this.access.requireOrganizationAccess(principal, orgId));
  }

  @Patch(':org')
  async patch(@CurrentPrincipal() principal: Principal, @SourceAddress() source: string, @Param('org') orgId: string, @Body() body: unknown) {
    await this.access.requireOrganizationAccess(principal, orgId);
    const changes = parseBody(patchOrganizationSchema, body);
    if (changes.name !== undefined) this.access.requirePlatformAdministrator(principal);
    const org = await this.organizations.update(orgId, changes);
    await this.audit.record({ org: orgId, actor: principal.name, action: 'organization.update', target: orgId, outcome: 'success', sourceAddress: source, details: { changes } });
    return this.presenter.organization(org);
  }

  @Put(':org/settings')
  @HttpCode(200)
  async putSettings(@CurrentPrincipal() principal: Principal, @SourceAddress() source: string, @Param('org') orgId: string, @Body() body: unknown) {
    await this.access.requireOrganizationAccess(principal, orgId);
    const settings = parseBody(organizationSettingsSchema, body, 'settings');
    const org = await this.organizations.update(orgId, { settings });
    await this.audit.record({ org: orgId, actor: principal.name, action: 'organization.settings.update', target: orgId, outcome: 'success', sourceAddress: source, details: { settings } });
    return org.settings;
  }
}
