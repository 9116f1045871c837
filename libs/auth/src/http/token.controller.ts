import { AuditAction, Audited, NotAudited } from '@app/audit';
import { Body, Controller, Headers, HttpCode, Param, Post, Res } from '@nestjs/common';
import { ApiExcludeEndpoint, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AnswersWithSecrets, CorrelationId, OAuthError, Public, RequestOrigin, SourceAddress } from '@app/common';
import { AppConfig } from '@app/config';
import { ClientAuthenticator, ClientAuthRequest } from '../clients/client-authenticator.service';
import { TokenIntrospection } from '../tokens/token-introspection.service';
import { TokenService } from '../tokens/token.service';
import { JWT_BEARER_GRANT, PASSWORD_GRANT, UserAuthenticator } from '../grants/user-authenticator.service';
import { AUTHORIZATION_CODE_GRANT, CodeGrantService, REFRESH_TOKEN_GRANT } from '../oidc/code-grant.service';
import { BackchannelAuthentication, CIBA_GRANT } from '../backchannel/backchannel-authentication.service';
import { readForm } from './oauth-form';

export const CLIENT_CREDENTIALS = 'client_credentials';
export const SUPPORTED_GRANTS = [CLIENT_CREDENTIALS, JWT_BEARER_GRANT, PASSWORD_GRANT, AUTHORIZATION_CODE_GRANT, REFRESH_TOKEN_GRANT, CIBA_GRANT];

/** What the token endpoint records, under either of its paths (DECISIONS 3.2): every grant's events. */
const TOKEN_ENDPOINT_EVENTS: [AuditAction, ...AuditAction[]] = [
  'token.issue',
  'authentication.fail',
  'authentication.lockout',
  'certificate.expired_use',
  'authorization_code.replay',
  'authorization_code.reject',
  'refresh_token.rotate',
  'refresh_token.reuse',
  'refresh_token.reject',
];

/**
 * The token service (DECISIONS 3): the token endpoint, its positioning variant, RFC 7662
 * introspection and RFC 7009 revocation. Reached without a bearer token; the client authenticates.
 */
@ApiTags('token service')
@Public()
@Controller()
export class TokenController {
  constructor(
    private readonly clients: ClientAuthenticator,
    private readonly tokens: TokenService,
    private readonly users: UserAuthenticator,
    private readonly introspection: TokenIntrospection,
    private readonly codeGrants: CodeGrantService,
    private readonly backchannel: BackchannelAuthentication,
    private readonly config: AppConfig,
  ) {}

  @Post('authentication/customer/:org/token')
  @Audited(...TOKEN_ENDPOINT_EVENTS)
  @HttpCode(200)
  @AnswersWithSecrets()
  token(
    @Param('org') org: string,
    @Headers() headers: Record<string, string | undefined>,
    @Body() body: unknown,
    @SourceAddress() address: string,
    @CorrelationId() correlationId: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    return this.issue(org, headers, body, { sourceAddress: address, correlationId }, reply, this.tokenUrl(this.config.authBaseUrl, org));
  }

  /**
   * Positioning variant (DECISIONS 3.2): reached under /oip, or on OIP_AUTH_HOSTS (rewritten to
   * /oip by the HTTP adapter). X-Request-ID must equal the path's organization id.
   */
  @Post('oip/authentication/customer/:org/token')
  @Audited(...TOKEN_ENDPOINT_EVENTS)
  @HttpCode(200)
  @AnswersWithSecrets()
  @ApiExcludeEndpoint()
  positioningToken(
    @Param('org') org: string,
    @Headers() headers: Record<string, string | undefined>,
    @Body() body: unknown,
    @SourceAddress() address: string,
    @CorrelationId() correlationId: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const requestId = headers['x-request-id'];
    if (requestId === undefined) throw OAuthError.invalidRequest('The positioning token endpoint needs the header X-Request-ID set to the organization id.');
    if (requestId !== org) throw OAuthError.invalidRequest('The header X-Request-ID must equal the organization id in the path.');
    return this.issue(org, headers, body, { sourceAddress: address, correlationId }, reply, this.tokenUrl(this.config.oipAuthBaseUrl, org));
  }

  /**
   * The backchannel authentication endpoint of OpenID CIBA Core 1.0 (section 7; DECISIONS 16):
   * client-authenticated exactly like the token endpoint; the answer carries auth_req_id, which the
   * client presents at the token endpoint, so no cache keeps it.
   */
  @Post('authentication/customer/:org/backchannel-authentication')
  @Audited('backchannel.request', 'backchannel.request_refused', 'authentication.fail', 'authentication.lockout', 'certificate.expired_use')
  @HttpCode(200)
  @AnswersWithSecrets()
  async backchannelAuthentication(
    @Param('org') org: string,
    @Headers() headers: Record<string, string | undefined>,
    @Body() body: unknown,
    @SourceAddress() address: string,
    @CorrelationId() correlationId: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const params = readForm(headers['content-type'], body);
    const origin = { sourceAddress: address, correlationId };
    // CIBA 7.1: a client assertion may name this endpoint as its audience, besides the issuer and the token endpoint.
    const request = this.authRequest(
      org,
      params,
      headers,
      origin,
      this.tokenUrl(this.config.authBaseUrl, org),
      `${this.tokens.issuer(org)}/backchannel-authentication`,
    );
    const client = await this.clients.authenticate(request);
    const response = await this.backchannel.initiate(client, params, origin);
    oauthJson(reply);
    return response;
  }

  @Post('authentication/customer/:org/introspect')
  @NotAudited('answers whether a token is active; changes nothing')
  @HttpCode(200)
  async introspect(
    @Param('org') org: string,
    @Headers() headers: Record<string, string | undefined>,
    @Body() body: unknown,
    @SourceAddress() address: string,
    @CorrelationId() correlationId: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const params = readForm(headers['content-type'], body);
    if (!params.token) throw OAuthError.invalidRequest('The token parameter is required.');
    const client = await this.clients.authenticate(
      this.authRequest(org, params, headers, { sourceAddress: address, correlationId }, this.tokenUrl(this.config.authBaseUrl, org)),
    );
    noStore(reply);
    return this.introspection.introspect(params.token, client.account.org_id);
  }

  @Post('authentication/customer/:org/revoke')
  @Audited('token.revoke', 'refresh_token.revoke')
  @HttpCode(200)
  async revoke(
    @Param('org') org: string,
    @Headers() headers: Record<string, string | undefined>,
    @Body() body: unknown,
    @SourceAddress() address: string,
    @CorrelationId() correlationId: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const params = readForm(headers['content-type'], body);
    if (!params.token) throw OAuthError.invalidRequest('The token parameter is required.');
    const client = await this.clients.authenticate(
      this.authRequest(org, params, headers, { sourceAddress: address, correlationId }, this.tokenUrl(this.config.authBaseUrl, org)),
    );
    await this.introspection.revoke(params.token, client.account, { sourceAddress: address, correlationId });
    noStore(reply);
    return {};
  }

  private async issue(org: string, headers: Record<string, string | undefined>, body: unknown, origin: RequestOrigin, reply: FastifyReply, tokenUrl: string) {
    const params = readForm(headers['content-type'], body);
    const grantType = params.grant_type;
    if (!grantType) throw OAuthError.invalidRequest('The grant_type parameter is required.');
    let response;
    if (grantType === CLIENT_CREDENTIALS) {
      const client = await this.clients.authenticate(this.authRequest(org, params, headers, origin, tokenUrl));
      response = await this.tokens.issueForClient(client, origin);
    } else if (grantType === JWT_BEARER_GRANT || grantType === PASSWORD_GRANT) {
      // Users are not clients: their grants carry no client credentials (a bare client_id is ignored).
      if (headers.authorization || params.client_secret !== undefined || params.client_assertion !== undefined) {
        throw OAuthError.invalidRequest(`The ${grantType} grant takes no client authentication.`);
      }
      const user =
        grantType === PASSWORD_GRANT
          ? await this.users.withPassword(org, params.username, params.password, origin)
          : await this.users.withAssertion(org, params.assertion, origin, this.authRequest(org, params, headers, origin, tokenUrl).audiences);
      response = await this.tokens.issueForUser(user, origin);
    } else if (grantType === AUTHORIZATION_CODE_GRANT) {
      response = await this.codeGrants.exchangeCode(this.authRequest(org, params, headers, origin, tokenUrl));
    } else if (grantType === REFRESH_TOKEN_GRANT) {
      response = await this.codeGrants.refresh(this.authRequest(org, params, headers, origin, tokenUrl));
    } else if (grantType === CIBA_GRANT) {
      const client = await this.clients.authenticate(this.authRequest(org, params, headers, origin, tokenUrl));
      response = await this.backchannel.redeem(client, params.auth_req_id, origin);
    } else {
      throw new OAuthError('unsupported_grant_type', `grant_type "${grantType}" is not supported; use ${SUPPORTED_GRANTS.join(', ')}.`, 400);
    }
    oauthJson(reply);
    return response;
  }

  private authRequest(
    org: string,
    params: Record<string, string>,
    headers: Record<string, string | undefined>,
    origin: RequestOrigin,
    tokenUrl: string,
    endpointUrl?: string,
  ): ClientAuthRequest {
    const audiences = [tokenUrl, this.tokenUrl(this.config.authBaseUrl, org), this.tokens.issuer(org), ...(endpointUrl ? [endpointUrl] : [])];
    return { org, params, authorization: headers.authorization, ...origin, audiences: [...new Set(audiences)] };
  }

  private tokenUrl(base: string, org: string): string {
    return `${base}/authentication/customer/${org}/token`;
  }
}

/** RFC 6749 5.1: the token service answers JSON with its charset. */
function oauthJson(reply: FastifyReply): void {
  reply.header('Content-Type', 'application/json; charset=UTF-8');
}

/** Introspection and revocation answers describe a token; like the token response (RFC 6749 5.1), no cache keeps them. */
function noStore(reply: FastifyReply): void {
  oauthJson(reply);
  reply.header('Cache-Control', 'no-store').header('Pragma', 'no-cache');
}
