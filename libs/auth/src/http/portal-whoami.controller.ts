import { Controller, Get, HttpCode, Optional, Param, Post, Req, Res } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { OrganizationService } from '@app/accounts';
import { Actor, AuthorizedBy, Clock, CurrentPrincipal, Principal, RequestActor } from '@app/common';
import { NotAudited } from '@app/audit';
import { AppConfig } from '@app/config';
import { RoleCatalog } from '../authorization/role-catalog';
import { Permission } from '../authorization/permissions';
import { RECENT_SIGN_IN_S } from '../account/own-security.service';
import { readCookie } from '../sessions/sign-in-session.service';
import { EXPIRED_SESSION_COOKIE, SESSION_COOKIE, SignInSessions } from '../sessions/sign-in-sessions';

/**
 * Who the caller is and what they may do, on the credential-management family, where the portal's
 * session cookie is accepted (DECISIONS 17): the token service's /authentication/.../whoami never
 * accepts a cookie. The portal builds its menus from `permissions` and the administrator flags (the
 * server still decides every call), and shows `session`'s timeouts before they end.
 */
@ApiTags('management portal')
@Controller('credential-management/customer/:org/whoami')
export class PortalWhoamiController {
  constructor(
    private readonly roles: RoleCatalog,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly organizations: OrganizationService,
    // Bound by the module that opens people's sessions; absent, every caller is token-authenticated.
    @Optional() private readonly sessions?: SignInSessions,
  ) {}

  @Get()
  @AuthorizedBy('own token')
  @ApiOperation({ summary: 'Who is calling: name, role, permissions, administrator flags and, for a browser session, its timeouts' })
  @ApiOkResponse({
    schema: {
      type: 'object',
      required: ['kind', 'name', 'org', 'role', 'organizationAdministrator', 'platformAdministrator', 'scopes', 'permissions', 'deviceCreation', 'session'],
      properties: {
        kind: { type: 'string', enum: ['user', 'system_account'] },
        name: { type: 'string', description: 'userName of a person, Client ID of a system account' },
        org: { type: 'string' },
        role: { type: 'string' },
        organizationAdministrator: { type: 'boolean' },
        platformAdministrator: { type: 'boolean' },
        scopes: { type: 'array', items: { type: 'string' } },
        permissions: { type: 'array', items: { type: 'string' } },
        deviceCreation: {
          type: 'boolean',
          description:
            "Whether POST /Device takes a new device from this caller: its role holds device.create and the organization's automaticDeviceCreation is on (the desk offers to add a card by its CUID only then)",
        },
        session: {
          type: 'object',
          nullable: true,
          description: 'The browser session the request came with, or null for a bearer token',
          required: [
            'idleTimeoutSeconds',
            'idleExpiresAt',
            'absoluteExpiresAt',
            'absoluteExpiresInSeconds',
            'authTime',
            'signedInSecondsAgo',
            'recentSignInSeconds',
          ],
          properties: {
            idleTimeoutSeconds: { type: 'integer', description: 'How long the session lives without a request; each request starts it again' },
            idleExpiresAt: { type: 'string', format: 'date-time' },
            absoluteExpiresAt: { type: 'string', format: 'date-time' },
            absoluteExpiresInSeconds: {
              type: 'integer',
              description: "Seconds until the absolute timeout, at the service's clock: a browser counts from its own, whatever its skew",
            },
            authTime: { type: 'string', format: 'date-time' },
            signedInSecondsAgo: {
              type: 'integer',
              description: "Seconds since the person last signed in, at the service's clock (a browser counts on from its own)",
            },
            recentSignInSeconds: {
              type: 'integer',
              description: 'How long a sign-in counts as recent: adding or removing a second factor needs one (DECISIONS 14.6)',
            },
          },
        },
      },
    },
  })
  async whoami(@Param('org') _org: string, @CurrentPrincipal() principal: Principal, @Req() request: FastifyRequest) {
    // The access guard has checked that :org is the caller's organization (customer form, DECISIONS 1).
    const role = this.roles.find(principal.role);
    const session = (await this.sessions?.fromRequest(request)) ?? null;
    const permissions = role?.sortedPermissions ?? [];
    // What POST /Device decides (DECISIONS 8), told ahead so that the desk offers no move the server refuses.
    const deviceCreation =
      permissions.includes(Permission.DeviceCreate) && Boolean((await this.organizations.findSettings(principal.org))?.automaticDeviceCreation);
    return {
      kind: principal.kind,
      name: principal.name,
      org: principal.org,
      role: principal.role,
      organizationAdministrator: principal.organizationAdministrator,
      platformAdministrator: principal.platformAdministrator,
      scopes: [...(role?.scopes ?? [])],
      permissions,
      deviceCreation,
      session: session
        ? {
            idleTimeoutSeconds: this.config.sessionIdleTimeoutS,
            idleExpiresAt: session.idleExpiresAt.toISOString(),
            absoluteExpiresAt: session.absoluteExpiresAt.toISOString(),
            absoluteExpiresInSeconds: Math.max(0, Math.floor((session.absoluteExpiresAt.getTime() - this.clock.now().getTime()) / 1000)),
            authTime: session.authTime.toISOString(),
            signedInSecondsAgo: Math.max(0, Math.floor((this.clock.now().getTime() - session.authTime.getTime()) / 1000)),
            recentSignInSeconds: RECENT_SIGN_IN_S,
          }
        : null,
    };
  }

  /**
   * Sign-out from the portal: ends the browser session the request came with, at once and on every
   * instance. A POST with the API's custom header from this origin (the CSRF rules of the
   * cookie-authenticated APIs), so another site cannot sign a person out. Idempotent: a request
   * without a session (a bearer token) changes nothing. A request that came with the session cookie
   * gets it expired (DECISIONS 14.2).
   */
  @Post('sign-out')
  @HttpCode(204)
  @AuthorizedBy('own token')
  @NotAudited('the session port audits the logout it performs, as every logout')
  @ApiOperation({ summary: 'End the browser session this request came with (the portal signs out)' })
  @ApiNoContentResponse({ description: 'The session is ended and its cookie expired (Max-Age=0); the session cookie no longer signs anyone in.' })
  async signOut(
    @Param('org') _org: string,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
    @RequestActor() actor: Actor,
  ): Promise<void> {
    const session = await this.sessions?.fromRequest(request);
    if (session) await this.sessions!.end(session.id, actor);
    if (readCookie(request.headers.cookie, SESSION_COOKIE) !== undefined) void reply.header('Set-Cookie', EXPIRED_SESSION_COOKIE);
  }
}
