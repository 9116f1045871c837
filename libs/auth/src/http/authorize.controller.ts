import { Audited } from '@app/audit';
import { Body, Controller, Get, Headers, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CorrelationId, Public, SourceAddress } from '@app/common';
import { AuthorizationService, AuthorizeOutcome } from '../oidc/authorization.service';
import { LogoutOutcome, LogoutService } from '../oidc/logout.service';
import { errorPage, logoutConfirmation, protectiveHeaders, sameSiteBounce, signedOutPage } from '../oidc/oidc-pages';
import { FORM_CONTENT_TYPE } from './oauth-form';
import { EXPIRED_SESSION_COOKIE } from '../sessions/sign-in-sessions';
import { LoginFormProtection } from '../sign-in/login-form-protection';

/**
 * The browser-facing endpoints of the authorization code flow (DECISIONS 15.2, 15.6): the
 * authorization endpoint (GET, or POST form, OIDC Core 3.1.2.1) and the end-session endpoint
 * (OpenID Connect RP-Initiated Logout 1.0). A person's browser reaches them without a token.
 */
@ApiTags('token service')
@Public()
@Controller('authentication/customer/:org')
export class AuthorizeController {
  constructor(
    private readonly authorization: AuthorizationService,
    private readonly logouts: LogoutService,
    private readonly forms: LoginFormProtection,
  ) {}

  @Get('authorize')
  @Audited('authorization_code.issue', 'authorization.deny')
  @ApiOperation({ summary: 'Authorization endpoint: authorization code flow with PKCE S256 (RFC 6749 4.1, RFC 7636, OIDC Core 3.1)' })
  async authorizeGet(
    @Param('org') org: string,
    @Query() query: Record<string, unknown>,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @SourceAddress() sourceAddress: string,
    @CorrelationId() correlationId: string,
  ) {
    return answer(reply, await this.authorization.authorize(org, query, request, { sourceAddress, correlationId }));
  }

  @Post('authorize')
  @Audited('authorization_code.issue', 'authorization.deny')
  @ApiOperation({ summary: 'Authorization endpoint, form-posted (OIDC Core 3.1.2.1)' })
  async authorizePost(
    @Param('org') org: string,
    @Headers('content-type') contentType: string | undefined,
    @Body() body: unknown,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @SourceAddress() sourceAddress: string,
    @CorrelationId() correlationId: string,
  ) {
    const form = formOf(contentType, body);
    if (!form) return errorPage(reply, 400, 'This sign-in request cannot be used', `A posted authorization request must be ${FORM_CONTENT_TYPE}.`);
    return answer(reply, await this.authorization.authorize(org, form, request, { sourceAddress, correlationId }));
  }

  // Reads only: the GET asks the person to confirm, and only the confirmation's POST ends the session (DECISIONS 15.6).
  @Get('end-session')
  @ApiOperation({ summary: 'End-session endpoint (OpenID Connect RP-Initiated Logout 1.0): asks the person to confirm' })
  async logoutGet(
    @Param('org') org: string,
    @Query() query: Record<string, unknown>,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @SourceAddress() sourceAddress: string,
    @CorrelationId() correlationId: string,
  ) {
    return this.answerLogout(request, reply, org, await this.logouts.logout(org, query, request, { sourceAddress, correlationId }));
  }

  @Post('end-session')
  @Audited('oidc.logout')
  @ApiOperation({ summary: 'End-session endpoint, form-posted (also the confirmation form)' })
  async logoutPost(
    @Param('org') org: string,
    @Headers('content-type') contentType: string | undefined,
    @Body() body: unknown,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @SourceAddress() sourceAddress: string,
    @CorrelationId() correlationId: string,
  ) {
    const form = formOf(contentType, body);
    if (!form) return errorPage(reply, 400, 'This sign-out request cannot be used', `A posted sign-out request must be ${FORM_CONTENT_TYPE}.`);
    return this.answerLogout(request, reply, org, await this.logouts.logout(org, form, request, { sourceAddress, correlationId }));
  }

  private answerLogout(request: FastifyRequest, reply: FastifyReply, org: string, outcome: LogoutOutcome): FastifyReply {
    if ('expireCookie' in outcome && outcome.expireCookie) reply.header('Set-Cookie', EXPIRED_SESSION_COOKIE);
    switch (outcome.kind) {
      case 'page':
        return errorPage(reply, outcome.status, outcome.title, outcome.message);
      case 'bounce':
        return sameSiteBounce(reply, outcome.location);
      case 'confirm': {
        // The login form's token, bound to this browser's pre-session cookie (DECISIONS 14.3, 15.6).
        const formToken = this.forms.formToken(org, this.forms.formCookieFor(request, reply));
        return logoutConfirmation(reply, `/authentication/customer/${org}/end-session`, { ...outcome.fields, form_token: formToken }, outcome.refused);
      }
      case 'signed-out':
        return signedOutPage(reply);
      case 'redirect':
        return protectiveHeaders(reply).status(303).header('Location', outcome.location).send();
    }
  }
}

function formOf(contentType: string | undefined, body: unknown): Record<string, unknown> | undefined {
  if ((contentType ?? '').split(';')[0].trim().toLowerCase() !== FORM_CONTENT_TYPE) return undefined;
  return body && typeof body === 'object' ? (body as Record<string, unknown>) : {};
}

function answer(reply: FastifyReply, outcome: AuthorizeOutcome): FastifyReply {
  if (outcome.kind === 'page') return errorPage(reply, outcome.status, outcome.title, outcome.message);
  if (outcome.kind === 'bounce') return sameSiteBounce(reply, outcome.location);
  return protectiveHeaders(reply).status(303).header('Location', outcome.location).send();
}
