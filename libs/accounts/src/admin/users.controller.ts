import { Audited } from '@app/audit';
import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import {
  ApiJsonBody,
  ApiPaging,
  ApiPemBody,
  CurrentPrincipal,
  listResponse,
  parseBody,
  parsePage,
  Principal,
  RequireAdministrator,
  Actor,
  RequestActor,
  PathFormats,
  readPem,
  readForce,
  searchFromQuery,
} from '@app/common';
import { USER_SEARCH_DEFINITION } from '../users/user-search';
import { UserService } from '../users/user.service';
import { EnrolmentLinks } from '../users/enrolment-links';
import { AdminPresenter } from './admin.presenter';
import { UserViews } from './user-views';
import { createUserSchema, patchUserSchema, setPasswordSchema } from './admin.schemas';

/** Users of the credential-management API, operators and cardholders (DECISIONS 3.5, 11). */
@ApiTags('administration')
@ApiBearerAuth()
@RequireAdministrator('organization')
@PathFormats({ id: 'uuid' })
@Controller('admin/v1/organizations/:org/users')
export class UsersController {
  constructor(
    private readonly users: UserService,
    private readonly presenter: AdminPresenter,
    private readonly enrolmentLinks: EnrolmentLinks,
    private readonly views: UserViews,
  ) {}

  @Post()
  @Audited('user.create')
  @ApiOperation({
    summary: 'Create an operator or a cardholder',
    description: 'A cardholder may get a password (12+ characters); the answer never contains it.',
  })
  @ApiJsonBody(createUserSchema, {
    userName: 'jane.doe',
    role: 'Cardholder',
    userType: 'cardholder',
    groups: ['Berlin'],
    name: { givenName: 'Jane', familyName: 'Doe' },
    emails: [{ value: 'jane@example.com', primary: true }],
  })
  async create(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Body() body: unknown,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const input = parseBody(createUserSchema, body);
    const user = await this.users.create(orgId, input, actor);
    // A person just created has signed in nowhere yet.
    const view = this.presenter.user(user, null);
    reply.header('Location', view.meta.location);
    return view;
  }

  @Get()
  @ApiOperation({
    summary: 'List the users of an organization, by userName',
    description:
      'filter: a SCIM filter (RFC 7644 3.4.2.2) on the attributes of the SCIM Users resource, e.g. userName sw "ja" or displayName co "ja" or emails.value co "ja". ' +
      "Each user carries lastSignIn: their latest sign-in at the organization's login page, or null when none is on record (the record of a session is kept 30 days past its end).",
  })
  @ApiPaging()
  @ApiQuery({ name: 'filter', required: false, example: 'userName sw "ja" or displayName co "ja" or emails.value co "ja"' })
  async list(@Param('org') orgId: string, @Query() query: Record<string, unknown>) {
    const { filter, ...paging } = query;
    const page = parsePage(paging);
    const { rows, total } =
      filter === undefined
        ? await this.users.list(orgId, page.startIndex - 1, page.count)
        : await this.users.search(orgId, searchFromQuery({ ...paging, filter, sortBy: 'userName' }, USER_SEARCH_DEFINITION));
    return listResponse(await this.views.many(orgId, rows), total, page);
  }

  @Get(':id')
  @ApiOperation({ summary: 'Read a user', description: 'Every answer that is a user carries lastSignIn, as in the list.' })
  async get(@Param('org') orgId: string, @Param('id') id: string) {
    return this.views.one(await this.users.get(orgId, id));
  }

  @Patch(':id')
  @Audited('user.update')
  @ApiOperation({
    summary: 'Change role, groups, disabled, name, displayName or emails of a user',
    description: 'null clears; disabling stops live tokens at once, re-enabling revokes them.',
  })
  @ApiJsonBody(patchUserSchema, { role: 'Help Desk', groups: ['Berlin', 'Munich'], disabled: false })
  async patch(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Param('id') id: string,
    @Body() body: unknown,
  ) {
    const changes = parseBody(patchUserSchema, body);
    return this.views.one(await this.users.update(orgId, id, changes, actor));
  }

  @Delete(':id')
  @Audited('user.delete', 'device.terminate', 'device.update', 'credential.revoke', 'certificate.revoke', 'crl.publish')
  @HttpCode(204)
  @ApiOperation({
    summary: 'Delete a user',
    description:
      'Its certificates, tokens and wallet go with it; its tokens stop working at once. 409 while the user holds devices that are not TERMINATED, unless force=true, which terminates them first.',
  })
  @ApiQuery({ name: 'force', required: false, schema: { type: 'boolean', default: false } })
  async delete(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Param('id') id: string,
    @Query('force') force: unknown,
  ): Promise<void> {
    await this.users.delete(orgId, id, actor, { force: readForce(force) });
  }

  /** PEM as application/x-pem-file or text/plain, or JSON {pem} (DECISIONS 11). */
  @Post(':id/certificates')
  @Audited('user.certificate.enroll')
  @ApiOperation({ summary: "Enroll a certificate for the user's jwt-bearer sign-in (RFC 7523)" })
  @ApiPemBody()
  async enrollCertificate(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Param('id') id: string,
    @Body() body: unknown,
  ) {
    const pem = readPem(body);
    const row = await this.users.enrollCertificate(orgId, id, pem, actor);
    return this.presenter.certificate(row);
  }

  /** Sets a cardholder's password (DECISIONS 3.5); answers 204, and the password is never echoed. */
  @Put(':id/password')
  @Audited('user.password.set')
  @HttpCode(204)
  @ApiOperation({ summary: "Set a cardholder's password (at least 12 characters)" })
  @ApiJsonBody(setPasswordSchema, { password: 'correct horse battery staple' })
  async setPassword(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Param('id') id: string,
    @Body() body: unknown,
  ): Promise<void> {
    const input = parseBody(setPasswordSchema, body);
    await this.users.setPassword(orgId, id, input.password, actor);
  }

  /**
   * A one-time enrolment link for the person (DECISIONS 14.4): they choose a password and add an
   * authenticator app, then are signed in. The link is in this answer only (no-store); their older
   * links stop working. The grant rules of a change of their credential apply (DECISIONS 5.3).
   */
  @Post(':id/enrolment-link')
  @Audited('user.enrolment_link.create')
  @ApiOperation({
    summary: 'Make a one-time enrolment link for a person (password and authenticator app)',
    description: "The answer holds the link once; the person's earlier links stop working. It expires after ENROLMENT_LINK_LIFETIME_S (default 24 h).",
  })
  async enrolmentLink(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Param('id') id: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const link = await this.enrolmentLinks.issue(orgId, id, actor);
    void reply.header('Cache-Control', 'no-store');
    return { id: link.userId, userName: link.userName, url: link.url, expiresAt: link.expiresAt.toISOString() };
  }
}
