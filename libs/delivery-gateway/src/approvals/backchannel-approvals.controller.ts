import { Audited } from '@app/audit';
import { Body, Controller, Get, Headers, HttpCode, Param, Post, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CorrelationId, PathFormats, Public, SourceAddress } from '@app/common';
import { BackchannelApprovalService, presentApproval } from './backchannel-approval.service';

/**
 * Where a person's authenticator app reads and decides a CIBA request it was pushed (DECISIONS 16;
 * CREDENTIAL-MANAGEMENT.md "Out-of-band approval"). No bearer token: each call is authenticated by
 * the signature of a registered authenticator key of the person the request is for.
 */
@ApiTags('out-of-band approval')
@Public()
@PathFormats({ id: 'uuid' })
@Controller('authentication/customer/:org/backchannel-requests')
export class BackchannelApprovalsController {
  constructor(private readonly approvals: BackchannelApprovalService) {}

  @Get(':id')
  @ApiOperation({
    summary: 'Read a backchannel authentication request (the authenticator app)',
    description:
      'Headers Authenticator-ID (the registered authenticator) and Authenticator-Signature (ES256 over "ciba-read.{org}.{id}", r||s base64url). ' +
      'Answers the client, scope, binding message, state, expiry and the texts to sign to approve or deny.',
  })
  async read(
    @Param('org') org: string,
    @Param('id') id: string,
    @Headers('authenticator-id') authenticatorId: string | undefined,
    @Headers('authenticator-signature') signature: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const request = await this.approvals.read(org, id, authenticatorId, signature);
    reply.header('Cache-Control', 'no-store');
    return presentApproval(request);
  }

  @Post(':id/decision')
  @Audited('backchannel.approve', 'backchannel.deny', 'backchannel.ping')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Approve or deny a backchannel authentication request (the authenticator app)',
    description:
      'Body {authenticator, decision: "approve" | "deny", signature}: ES256 over "ciba-approval.{org}.{id}.{decision}" by the key of a registered ' +
      "authenticator of the request's person. A request is decided once: deciding again, or after expiry, is a 409.",
  })
  async decide(
    @Param('org') org: string,
    @Param('id') id: string,
    @Body() body: unknown,
    @SourceAddress() sourceAddress: string,
    @CorrelationId() correlationId: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const input = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
    const request = await this.approvals.decide(org, id, input, { sourceAddress, correlationId });
    reply.header('Cache-Control', 'no-store');
    return presentApproval(request);
  }
}
