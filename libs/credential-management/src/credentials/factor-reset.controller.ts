import { Controller, HttpCode, Param, Post, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Audited } from '@app/audit';
import { UserService } from '@app/accounts';
import { Actor, PathFormats, RequestActor, RequireAdministrator } from '@app/common';
import { FactorResetService } from './factor-reset.service';

/** An administrator resets a person's second factors (DECISIONS 14.4). */
@ApiTags('administration')
@ApiBearerAuth()
@RequireAdministrator('organization')
@PathFormats({ id: 'uuid' })
@Controller('admin/v1/organizations/:org/users')
export class FactorResetController {
  constructor(
    private readonly resets: FactorResetService,
    private readonly users: UserService,
  ) {}

  @Post(':id/factors/required')
  @HttpCode(200)
  @Audited('user.factors.require')
  @ApiOperation({
    summary: 'Mark a person as needing a second factor: after their next right password they enrol one (TOTP or a passkey) before any session opens',
    description: 'The mark clears once they enrol a factor; a person who holds one already just signs in with it. Nothing else changes.',
  })
  async requireSecondFactor(@RequestActor() actor: Actor, @Param('org') orgId: string, @Param('id') id: string) {
    const marked = await this.users.requireSecondFactor(orgId, id, actor);
    return { id: marked.id, userName: marked.userName, mustEnrolSecondFactor: true };
  }

  @Post(':id/factors/reset')
  @Audited('user.factors.reset', 'device.revoke', 'credential.revoke', 'session.end', 'user.enrolment_link.create')
  @ApiOperation({
    summary: "Reset a person's second factors: revoke their authenticator apps, end their sessions, and make a new enrolment link",
    description: 'The link is in this answer only; older links stop working. Cards are not touched.',
  })
  async reset(@RequestActor() actor: Actor, @Param('org') orgId: string, @Param('id') id: string, @Res({ passthrough: true }) reply: FastifyReply) {
    const reset = await this.resets.reset(orgId, id, actor);
    void reply.header('Cache-Control', 'no-store');
    return {
      id: reset.userId,
      userName: reset.userName,
      url: reset.url,
      expiresAt: reset.expiresAt.toISOString(),
      revokedDevices: reset.revokedDevices,
      endedSessions: reset.endedSessions,
    };
  }
}
