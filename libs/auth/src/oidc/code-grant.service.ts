import { Injectable } from '@nestjs/common';
import { createHash, randomBytes } from 'node:crypto';
import { AuditLog } from '@app/audit';
import { OidcClient, SecretHasher, TokenSubjectWithSettings, UserRepository } from '@app/accounts';
import { Clock, OAuthError, RequestOrigin } from '@app/common';
import { ClientAuthenticator, ClientAuthRequest } from '../clients/client-authenticator.service';
import { PersonTokenContext, TokenResponse, TokenService } from '../tokens/token.service';
import { OidcClientCache } from './oidc-client.cache';
import { AuthorizationGrantRepository, GrantRow, KEY_NOT_ACTIVE } from './authorization-grant.repository';
import { CODE_VERIFIER } from './authorization-request';
import { acrFor } from './authorization.service';

export const AUTHORIZATION_CODE_GRANT = 'authorization_code';
export const REFRESH_TOKEN_GRANT = 'refresh_token';

/** A refresh token is good for 30 days after its issue; each rotation gives a new one (DECISIONS 15.5). */
export const REFRESH_TOKEN_LIFETIME_MS = 30 * 86_400_000;

const GENERIC_CODE_FAILURE = 'The authorization code is not valid.';
const GENERIC_REFRESH_FAILURE = 'The refresh token is not valid.';

/**
 * The token endpoint's authorization_code and refresh_token grants (RFC 6749 4.1.3, 6; RFC 7636 4.5;
 * DECISIONS 15.3-15.5). Confidential clients authenticate as at every other grant; public clients
 * send only client_id, and PKCE is what binds the code to them.
 */
@Injectable()
export class CodeGrantService {
  constructor(
    private readonly clientAuth: ClientAuthenticator,
    private readonly clients: OidcClientCache,
    private readonly grants: AuthorizationGrantRepository,
    private readonly users: UserRepository,
    private readonly hasher: SecretHasher,
    private readonly tokens: TokenService,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
  ) {}

  async exchangeCode(request: ClientAuthRequest): Promise<TokenResponse> {
    const { params } = request;
    const client = await this.client(request);
    if (!params.code) throw OAuthError.invalidRequest('The authorization_code grant needs the code parameter.');
    if (!params.redirect_uri) throw OAuthError.invalidRequest('The authorization_code grant needs redirect_uri, the one sent to the authorization endpoint.');
    if (!params.code_verifier) throw OAuthError.invalidRequest('The authorization_code grant needs code_verifier (PKCE, RFC 7636).');
    if (!CODE_VERIFIER.test(params.code_verifier))
      throw OAuthError.invalidRequest('code_verifier must be 43-128 characters of A-Z, a-z, 0-9, "-", ".", "_" and "~".');
    const codeHash = this.hasher.hash(params.code);
    const now = this.clock.now();
    let accessToken = await this.tokens.plan(client.orgSettings);
    const refreshToken = randomBytes(32).toString('base64url');
    // One statement consumes the code, checks it and records what it gives (DECISIONS 15.3); the tokens are signed after.
    const redeem = () =>
      this.grants.redeemCode({
        codeHash,
        accountId: client.accountId,
        now,
        redirectUri: params.redirect_uri!,
        verifierChallenge: s256(params.code_verifier!),
        accessToken,
        refreshToken: { hash: this.hasher.hash(refreshToken), expiresAt: new Date(now.getTime() + REFRESH_TOKEN_LIFETIME_MS) },
        sourceAddress: request.sourceAddress,
        correlationId: request.correlationId,
      });
    let grant = await redeem();
    // A code is not consumed while the key chosen for its tokens is no longer active (DECISIONS 12.1): again with the key active now.
    for (let attempt = 1; grant === KEY_NOT_ACTIVE; attempt++) {
      accessToken = await this.tokens.rekey(accessToken, attempt);
      grant = await redeem();
    }
    if (!grant) throw await this.codeRefused(codeHash, client, request);
    const reject = async (reason: string, description: string) => {
      await this.spend(grant, reason, client, request);
      return OAuthError.invalidGrant(description);
    };
    if (!grant.redirectUriMatches) throw await reject('redirect_uri', 'redirect_uri differs from the one sent to the authorization endpoint.');
    if (!grant.verifierMatches) throw await reject('code_verifier', 'The code_verifier does not match the code_challenge.');
    if (!grant.issued) throw await reject('user', 'The person is disabled or no longer exists.');
    let response: TokenResponse;
    try {
      response = await this.tokens.signRecordedForPerson(grant.person, accessToken, this.personContext(grant, client, 'authorization_code'));
    } catch (error) {
      // Recorded but never handed out (the HSM failed, say): the grant ends with the token recorded for it.
      await this.spend(grant, 'not_issued', client, request).catch(() => undefined);
      throw error;
    }
    if (grant.refresh_tokens !== 'none') response.refresh_token = refreshToken;
    return response;
  }

  async refresh(request: ClientAuthRequest): Promise<TokenResponse> {
    const { params } = request;
    const client = await this.client(request);
    if (!params.refresh_token) throw OAuthError.invalidRequest('The refresh_token grant needs the refresh_token parameter.');
    const hash = this.hasher.hash(params.refresh_token);
    const now = this.clock.now();
    const grant = await this.grants.rotateRefreshToken(hash, client.accountId, now);
    if (!grant) throw await this.refreshRefused(hash, client, request);
    const person = await this.livePerson(grant);
    if (!person) {
      await this.grants.revoke(grant.id, 'user', now);
      await this.record('refresh_token.reject', grant.org_id, client.clientId, request, { grantId: grant.id, reason: 'user' });
      throw OAuthError.invalidGrant('The person is disabled or no longer exists.');
    }
    const response = await this.issueRefreshed(grant, person, client, request);
    await this.record('refresh_token.rotate', grant.org_id, client.clientId, request, { grantId: grant.id, userName: person.user.user_name });
    return response;
  }

  /**
   * RFC 7009 for refresh tokens: a client revokes one of its own, and with it the whole grant (its
   * refresh tokens and the access tokens issued from it; RFC 7009 2.1 allows it). Another client's or
   * an unknown token: nothing happens, and the answer is the same (RFC 7009 2.2).
   */
  async revokeRefreshToken(token: string, caller: { id: string; org_id: string; client_id: string }, origin: RequestOrigin): Promise<void> {
    const row = await this.grants.findRefreshToken(this.hasher.hash(token), this.clock.now());
    if (!row || row.account_id !== caller.id || row.grant_revoked_at !== null) return;
    const revokedTokens = await this.grants.revoke(row.grant_id, 'client_revocation', this.clock.now());
    await this.audit.record({
      org: caller.org_id,
      actor: caller.client_id,
      action: 'refresh_token.revoke',
      target: caller.client_id,
      outcome: 'success',
      sourceAddress: origin.sourceAddress,
      correlationId: origin.correlationId,
      details: { grantId: row.grant_id, revokedTokens },
    });
  }

  /**
   * The client of a code or refresh grant: authenticated as at every grant when it sends credentials;
   * with client_id alone only when it is a public client (RFC 6749 2.1, 3.2.1).
   */
  private async client(request: ClientAuthRequest): Promise<OidcClient> {
    const { params } = request;
    const authenticates = request.authorization !== undefined || params.client_secret !== undefined || params.client_assertion !== undefined;
    if (authenticates) {
      const { account } = await this.clientAuth.authenticate(request);
      const client = await this.clients.find(account.org_id, account.client_id);
      if (!client) throw new OAuthError('unauthorized_client', 'This system account is not set up for the authorization code flow.', 400);
      return client;
    }
    if (!params.client_id) throw OAuthError.invalidClient('No client authentication: send client_id (public clients) or client credentials.');
    const client = await this.clients.find(request.org, params.client_id);
    if (!client || client.disabled || !client.settings.public_client) {
      throw OAuthError.invalidClient('Client authentication failed: only a public client may send client_id alone.');
    }
    return client;
  }

  private async livePerson(grant: GrantRow): Promise<TokenSubjectWithSettings | undefined> {
    const person = await this.users.findTokenSubject(grant.org_id, grant.user_id);
    return person && !person.user.disabled ? person : undefined;
  }

  /** A consumed code that gives nothing: its grant is revoked, with whatever was recorded under it (audit 83013). */
  private async spend(grant: Pick<GrantRow, 'id' | 'org_id'>, reason: string, client: OidcClient, origin: RequestOrigin): Promise<void> {
    await this.grants.revoke(grant.id, reason, this.clock.now());
    await this.record('authorization_code.reject', grant.org_id, client.clientId, origin, { grantId: grant.id, reason });
  }

  /** What a grant's tokens say of the sign-in (DECISIONS 15.4). */
  private personContext(
    grant: Pick<GrantRow, 'id' | 'auth_time' | 'amr' | 'nonce'>,
    client: OidcClient,
    method: 'authorization_code' | 'refresh_token',
  ): PersonTokenContext {
    return {
      clientId: client.clientId,
      grantId: grant.id,
      method,
      idTokenClaims: {
        auth_time: Math.floor(grant.auth_time.getTime() / 1000),
        amr: grant.amr,
        acr: acrFor(grant.amr),
        // OIDC Core 12.2: an id_token from a refresh carries no nonce.
        ...(method === 'authorization_code' && grant.nonce !== null ? { nonce: grant.nonce } : {}),
      },
    };
  }

  /**
   * A refresh's tokens: signs and records them, then adds the new refresh token on condition that the
   * grant is still live. A reuse seen by another request meanwhile revokes the grant, and with it
   * every access token recorded under it, before or after (the bearer check reads the grant's revocation).
   */
  private async issueRefreshed(grant: GrantRow, person: TokenSubjectWithSettings, client: OidcClient, origin: RequestOrigin): Promise<TokenResponse> {
    const response = await this.tokens.issueForPerson(person, this.personContext(grant, client, 'refresh_token'), origin);
    if (grant.refresh_tokens === 'none') return response;
    const now = this.clock.now();
    const refreshToken = randomBytes(32).toString('base64url');
    if (!(await this.grants.addRefreshToken(grant.id, this.hasher.hash(refreshToken), now, new Date(now.getTime() + REFRESH_TOKEN_LIFETIME_MS)))) {
      // Revoked meanwhile: the access token just recorded is refused by the bearer check already.
      throw OAuthError.invalidGrant(GENERIC_REFRESH_FAILURE);
    }
    response.refresh_token = refreshToken;
    return response;
  }

  /** Why a code could not be consumed; a code used before revokes everything issued from it (RFC 6749 4.1.2). */
  private async codeRefused(codeHash: Buffer, client: OidcClient, request: ClientAuthRequest): Promise<OAuthError> {
    const row = await this.grants.findByCode(codeHash);
    if (!row || row.org_id !== request.org) {
      await this.record('authorization_code.reject', request.org, client.clientId, request, { reason: 'unknown' });
      return OAuthError.invalidGrant(GENERIC_CODE_FAILURE);
    }
    if (row.code_used_at !== null) {
      const revokedTokens = await this.grants.revoke(row.id, 'code_replay', this.clock.now());
      await this.record('authorization_code.replay', row.org_id, client.clientId, request, { grantId: row.id, revokedTokens });
      return OAuthError.invalidGrant('The authorization code was used before; every token issued from it is revoked.');
    }
    const [reason, description] =
      row.account_id !== client.accountId
        ? ['another_client', 'The authorization code was issued to another client.']
        : row.revoked_at !== null
          ? ['revoked', 'The authorization code was revoked.']
          : ['expired', 'The authorization code expired; codes are valid for 60 seconds. Start the sign-in again.'];
    await this.record('authorization_code.reject', row.org_id, client.clientId, request, { grantId: row.id, reason });
    return OAuthError.invalidGrant(description);
  }

  /** Why a refresh token could not be rotated; a rotated one used again revokes its whole family (RFC 9700 4.14.2). */
  private async refreshRefused(hash: Buffer, client: OidcClient, request: ClientAuthRequest): Promise<OAuthError> {
    const row = await this.grants.findRefreshToken(hash, this.clock.now());
    const reject = async (reason: string, description: string, grantId?: string) => {
      await this.record('refresh_token.reject', request.org, client.clientId, request, { grantId, reason });
      return OAuthError.invalidGrant(description);
    };
    if (!row) return reject('unknown', GENERIC_REFRESH_FAILURE);
    if (row.account_id !== client.accountId) return reject('another_client', 'The refresh token was issued to another client.', row.grant_id);
    // Before the revocation: a grant bound to a session is revoked when the session ends, and the ended session is what to tell.
    if (!row.session_live)
      return reject('session_ended', 'The sign-in session this refresh token belongs to has ended; the person must sign in again.', row.grant_id);
    if (row.grant_revoked_at !== null) return reject('revoked', 'The refresh token was revoked; the person must sign in again.', row.grant_id);
    if (row.rotated_at !== null) {
      const revokedTokens = await this.grants.revoke(row.grant_id, 'refresh_reuse', this.clock.now());
      await this.record('refresh_token.reuse', request.org, client.clientId, request, { grantId: row.grant_id, revokedTokens });
      return OAuthError.invalidGrant('The refresh token was used before; its whole family is revoked and the person must sign in again.');
    }
    return reject('expired', 'The refresh token expired; the person must sign in again.', row.grant_id);
  }

  private record(
    action: 'authorization_code.replay' | 'authorization_code.reject' | 'refresh_token.rotate' | 'refresh_token.reuse' | 'refresh_token.reject',
    org: string,
    clientId: string,
    origin: RequestOrigin,
    details: Record<string, unknown>,
  ): Promise<void> {
    const success = action === 'refresh_token.rotate';
    return this.audit.record({
      org,
      actor: clientId,
      action,
      target: clientId,
      outcome: success ? 'success' : 'failure',
      sourceAddress: origin.sourceAddress,
      correlationId: origin.correlationId,
      details,
    });
  }
}

/**
 * RFC 7636 4.6: BASE64URL(SHA256(ASCII(code_verifier))), which the code's redemption compares with its
 * code_challenge (the challenge is no secret: it crossed the browser in the authorization request).
 */
export function s256(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}
