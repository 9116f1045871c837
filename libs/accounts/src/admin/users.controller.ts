import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AuthorizedBy, CurrentPrincipal, DomainError, Principal, SourceAddress, listResponse, parseBody, parsePage, z } from '@app/common';
import { UserService } from '../users/user.service';
import { AdminAccessPolicy } from './admin-access.policy';
import { AdminPresenter } from './admin.presenter';

const userName = z.string({ message: 'must be a string' }).regex(/^[A-Za-z0-9._@-]{1,128}$/, 'must be 1-128 characters of A-Z, a-z, 0-9, ".", "_", "@" and "-"');
const userType = z.enum(['operator', 'cardholder'], { message: 'must be "operator" or "cardholder"' });
const role = z.string({ message: 'must be a string' }).trim().min(1, 'must name a role of scopeAssignment.properties').max(64, 'must be at most 64 characters');
const groups = z
  .array(z.string({ message: 'must be a string' }).trim().min(1, 'must not be empty').max(128, 'must be at most 128 characters'), { message: 'must be an array of group names' })
  .max(100, 'must list at most 100 groups')
  .refine((list) => new Set(list).size === list.length, 'must not list a group twice');
const text = (max: number) => z.string({ message: 'must be a string' }).trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`);
/** The SCIM complex attribute `name` (RFC 7643 4.1.1). */
const name = z
  .object({ givenName: text(256), familyName: text(256), middleName: text(256).optional(), formatted: text(512).optional() }, { message: 'must be an object {givenName, familyName, middleName?, formatted?}' })
  .strict();
const displayName = text(256);
const emails = z
  .array(
    z
      .object(
        {
          value: z.email({ message: 'must be an e-mail address' }).max(254, 'must be at most 254 characters'),
          type: text(32).optional(),
          primary: z.boolean({ message: 'must be true or false' }).optional(),
        },
        { message: 'must be an object {value, type?, primary?}' },
      )
      .strict(),
    { message: 'must be an array of {value, type?, primary?}' },
  )
  .max(20, 'must list at most 20 addresses')
  .refine((list) => list.filter((email) => email.primary).length <= 1, 'must mark at most one address primary');
/** Length rules (12-1024 characters) are the PasswordHasher's, so that they are checked in one place. */
const password = z.string({ message: 'must be a string' });

const createUserSchema = z
  .object({
    userName,
    role,
    userType: userType.optional(),
    groups: groups.nullable().optional(),
    password: password.optional(),
    name: name.nullable().optional(),
    displayName: displayName.nullable().optional(),
    emails: emails.nullable().optional(),
  })
  .strict();

/** `null` clears name and displayName and empties groups and emails (DECISIONS 7); userName and userType cannot change. */
const patchUserSchema = z
  .object({
    role: role.optional(),
    groups: groups.nullable().optional(),
    disabled: z.boolean({ message: 'must be true or false' }).optional(),
    name: name.nullable().optional(),
    displayName: displayName.nullable().optional(),
    emails: emails.nullable().optional(),
    userName: z.string({ message: 'must be a string' }).optional(),
    userType: userType.optional(),
  })
  .strict();

const setPasswordSchema = z.object({ password }).strict();

/** Users of the credential-management API, operators and cardholders (DECISIONS 3.5, 11). */
@ApiTags('administration')
@ApiBearerAuth()
@AuthorizedBy('administrator')
@Controller('admin/v1/organizations/:org/users')
export class UsersController {
  constructor(
    private readonly users: UserService,
    private readonly access: AdminAccessPolicy,
    private readonly presenter: AdminPresenter,
  ) {}

  @Post()
  async create(
    @CurrentPrincipal() principal: Principal,
    @SourceAddress() source: string,
    @Param('org') orgId: string,
    @Body() body: unknown,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    await this.access.requireOrganizationAccess(principal, orgId);
    const input = parseBody(createUserSchema, body);
    const user = await this.users.create(orgId, input, { name: principal.name, sourceAddress: source });
    const view = this.presenter.user(user);
    reply.header('Location', view.meta.location);
    return view;
  }

  @Get()
  async list(@CurrentPrincipal() principal: Principal, @Param('org') orgId: string, @Query() query: Record<string, unknown>) {
    await this.access.requireOrganizationAccess(principal, orgId);
    const page = parsePage(query);
    const { rows, total } = await this.users.list(orgId, page.startIndex - 1, page.count);
    return listResponse(rows.map((r) => this.presenter.user(r)), total, page);
  }

  @Get(':id')
  async get(@CurrentPrincipal() principal: Principal, @Param('org') orgId: string, @Param('id') id: string) {
    await this.access.requireOrganizationAccess(principal, orgId);
    return this.presenter.user(await this.users.get(orgId, id));
  }

  @Patch(':id')
  async patch(@CurrentPrincipal() principal: Principal, @SourceAddress() source: string, @Param('org') orgId: string, @Param('id') id: string, @Body() body: unknown) {
    await this.access.requireOrganizationAccess(principal, orgId);
    const changes = parseBody(patchUserSchema, body);
    const user = await this.users.update(orgId, id, changes, { name: principal.name, sourceAddress: source });
    return this.presenter.user(user);
  }

  @Delete(':id')
  @HttpCode(204)
  async delete(@CurrentPrincipal() principal: Principal, @SourceAddress() source: string, @Param('org') orgId: string, @Param('id') id: string): Promise<void> {
    await this.access.requireOrganizationAccess(principal, orgId);
    await this.users.delete(orgId, id, { name: principal.name, sourceAddress: source });
  }

  /** PEM as application/x-pem-file or text/plain, or JSON {pem} (DECISIONS 11). */
  @Post(':id/certificates')
  async enrollCertificate(@CurrentPrincipal() principal: Principal, @SourceAddress() source: string, @Param('org') orgId: string, @Param('id') id: string, @Body() body: unknown) {
    await this.access.requireOrganizationAccess(principal, orgId);
    const pem = readPem(body);
    const row = await this.users.enrollCertificate(orgId, id, pem, { name: principal.name, sourceAddress: source });
    return this.presenter.certificate(row);
  }

  /** Sets a cardholder's password (DECISIONS 3.5); answers 204, and the password is never echoed. */
  @Put(':id/password')
  @HttpCode(204)
  async setPassword(@CurrentPrincipal() principal: Principal, @SourceAddress() source: string, @Param('org') orgId: string, @Param('id') id: string, @Body() body: unknown): Promise<void> {
    await this.access.requireOrganizationAccess(principal, orgId);
    const input = parseBody(setPasswordSchema, body);
    await this.users.setPassword(orgId, id, input.password, { name: principal.name, sourceAddress: source });
  }
}

// The same reading as system-accounts.controller.ts readPem; a shared helper would live in admin/.
function readPem(body: unknown): string {
  if (typeof body === 'string') return body;
  if (Buffer.isBuffer(body)) return body.toString('utf8');
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    return parseBody(z.object({ pem: z.string({ message: 'must be the certificate in PEM form, as a string' }) }).strict(), body).pem;
  }
  throw new DomainError('INVALID_SYNTAX', 'Send the certificate as PEM (Content-Type application/x-pem-file or text/plain) or as JSON {"pem": "..."}.');
}
