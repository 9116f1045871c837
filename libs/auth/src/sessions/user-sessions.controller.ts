import { Controller, Delete, Get, HttpCode, Param } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Audited } from '@app/audit';
import { UserService } from '@app/accounts';
import { Actor, DomainError, PathFormats, RequestActor, RequireAdministrator, listResponse } from '@app/common';
import { SessionSummary, SignInSessionService } from './sign-in-session.service';

/**
 * An administrator's view of a person's browser sessions (DECISIONS 14.2): list the live ones, end
 * them all or one. The administration API's access rule (section 11), and the grant rules of a
 * change of the user's credentials (UserService.withCredentialLock: an administrator may not act on
 * an account above its own). Ending is audited as `session.end`, reason `administrator`.
 */
@ApiTags('administration')
@ApiBearerAuth()
@RequireAdministrator('organization')
@PathFormats({ id: 'uuid', sessionId: 'uuid' })
@Controller('admin/v1/organizations/:org/users/:id/sessions')
export class UserSessionsController {
  constructor(
    private readonly users: UserService,
    private readonly sessions: SignInSessionService,
  ) {}

  @Get()
  @ApiOperation({ summary: "List a user's live browser sessions", description: 'Newest first; never a cookie or its hash.' })
  async list(@Param('org') orgId: string, @Param('id') id: string) {
    await this.users.get(orgId, id);
    const sessions = await this.sessions.listOfUser(orgId, id);
    return listResponse(sessions.map(present), sessions.length, { startIndex: 1, count: sessions.length });
  }

  @Delete()
  @Audited('session.end')
  @HttpCode(204)
  @ApiOperation({ summary: "End all of a user's browser sessions", description: 'At once, on every instance.' })
  async endAll(@RequestActor() actor: Actor, @Param('org') orgId: string, @Param('id') id: string): Promise<void> {
    await this.users.withCredentialLock(orgId, id, actor, (_user, tx) => this.sessions.endAllOfUser(orgId, id, 'administrator', actor, tx));
  }

  @Delete(':sessionId')
  @Audited('session.end')
  @HttpCode(204)
  @ApiOperation({ summary: "End one of a user's browser sessions" })
  async endOne(@RequestActor() actor: Actor, @Param('org') orgId: string, @Param('id') id: string, @Param('sessionId') sessionId: string): Promise<void> {
    const ended = await this.users.withCredentialLock(orgId, id, actor, (_user, tx) => this.sessions.endOne(sessionId, actor, 'administrator', orgId, tx, id));
    if (!ended) throw new DomainError('NOT_FOUND', `User ${id} has no live session ${sessionId}.`);
  }
}

function present(session: SessionSummary) {
  return {
    id: session.id,
    amr: session.amr,
    authTime: session.authTime.toISOString(),
    lastSeen: session.lastSeenAt.toISOString(),
    idleExpires: session.idleExpiresAt.toISOString(),
    absoluteExpires: session.absoluteExpiresAt.toISOString(),
    sourceAddress: session.sourceAddress,
    userAgent: session.userAgent,
  };
}
