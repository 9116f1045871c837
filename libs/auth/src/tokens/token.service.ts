import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Clock, RequestOrigin } from '@app/common';
import { AppConfig } from '@app/config';
import { Metrics } from '@app/observability';
import { OrganizationSettings, TokenSubjectWithSettings, UserRow } from '@app/accounts';
import { RoleCatalog } from '../authorization/role-catalog';
import { AuthenticatedClient } from '../clients/client-authenticator.service';
import { AuthenticatedUser } from '../grants/user-authenticator.service';
import { SigningKeys, type TokenSigningKey } from '../signing-keys/signing-keys.service';
import { JwsService } from './jws.service';
import { IssuedTokenRecord, TokenRepository } from './token.repository';
import { GroupCommit } from '@app/persistence';

export interface TokenResponse {
  access_token: string;
  id_token: string;
  token_type: 'Bearer';
  expires_in: number;
  /** The authorization code and refresh token grants only (DECISIONS 15.5). */
  refresh_token?: string;
}

/** What the authorization code flow adds to a person's tokens (DECISIONS 15.4). */
export interface PersonTokenContext {
  /** The client the person signed in to: the access token's `client_id`, the id_token's `aud` and `azp`. */
  clientId: string;
  /** The grant (authorization code and its refresh token family) the tokens come from: a replay revokes them by it. */
  grantId: string;
  /** Claims of the id_token about the sign-in: auth_time, amr, acr, and nonce (not after a refresh). */
  idTokenClaims: { auth_time: number; amr: string[]; acr: string; nonce?: string };
  method: 'authorization_code' | 'refresh_token';
}

/** An access token's id, times and signing key, fixed before it is recorded and signed. */
export interface PlannedAccessToken {
  jti: string;
  issuedAt: Date;
  expiresAt: Date;
  /** The key that signs it and its id_token, whose row covers `expiresAt` (DECISIONS 12.1). */
  key: TokenSigningKey;
}

/** Issues the token pair of DECISIONS 3.4: an RFC 9068 access token and an OpenID id_token. */
@Injectable()
export class TokenService {
  /** Concurrent token requests share one statement and one commit for their rows (group commit). */
  private readonly writes = new GroupCommit<IssuedTokenRecord, boolean>((records) => this.tokens.recordIssued(records));

  constructor(
    private readonly jws: JwsService,
    private readonly keys: SigningKeys,
    private readonly tokens: TokenRepository,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    private readonly metrics: Metrics,
    private readonly roles: RoleCatalog,
  ) {}

  issuer(org: string): string {
    return `${this.config.authBaseUrl}/authentication/customer/${org}`;
  }

  issueForClient(client: AuthenticatedClient, origin: RequestOrigin): Promise<TokenResponse> {
    const { account } = client;
    return this.issue(
      { org: account.org_id, subject: account.client_id, role: account.role, clientId: account.client_id, accountId: account.id },
      client.orgSettings,
      { ...origin, method: client.method, secretId: client.secretId },
    );
  }

  issueForUser(authenticated: AuthenticatedUser, origin: RequestOrigin): Promise<TokenResponse> {
    const { user } = authenticated;
    return this.issue({ org: user.org_id, subject: user.user_name, role: user.role, userId: user.id }, authenticated.orgSettings, {
      ...origin,
      method: authenticated.method,
    });
  }

  /**
   * A person's tokens for a client of the authorization code flow: the same access token the other
   * person grants give (sub = userName, the user's live role), with the client's `client_id`, and an
   * id_token for the client (DECISIONS 15.4).
   */
  issueForPerson(authenticated: TokenSubjectWithSettings, context: PersonTokenContext, origin: RequestOrigin): Promise<TokenResponse> {
    const { user } = authenticated;
    return this.issue(
      { org: user.org_id, subject: user.user_name, role: user.role, userId: user.id, clientId: context.clientId, grantId: context.grantId },
      authenticated.orgSettings,
      { ...origin, method: context.method },
      { aud: context.clientId, azp: context.clientId, ...context.idTokenClaims },
    );
  }

  /**
   * The tokens of a CIBA grant (DECISIONS 16): the person's access token (their role, their token
   * row, so disabling them stops it), issued to the client that asked (`client_id`), and an id_token
   * for that client (`aud`) saying how and when the person approved (`amr` ["hwk"], `auth_time`).
   */
  issueForApprovedPerson(
    person: Pick<UserRow, 'id' | 'org_id' | 'user_name' | 'role'>,
    client: AuthenticatedClient,
    approval: { authTime: Date },
    origin: RequestOrigin,
  ): Promise<TokenResponse> {
    return this.issue(
      { org: person.org_id, subject: person.user_name, role: person.role, clientId: client.account.client_id, userId: person.id },
      client.orgSettings,
      { ...origin, method: 'ciba' },
      { aud: client.account.client_id, amr: ['hwk'], auth_time: Math.floor(approval.authTime.getTime() / 1000) },
    );
  }

  /**
   * The id, times and key of a person's access token that its caller records before it is signed:
   * the code exchange records it in the statement that consumes the code (DECISIONS 15.3), then signs
   * it with `signRecordedForPerson`.
   */
  async plan(orgSettings: OrganizationSettings): Promise<PlannedAccessToken> {
    const lifetime = orgSettings.accessTokenLifetime ?? this.config.accessTokenLifetimeS;
    const iat = Math.floor(this.clock.now().getTime() / 1000);
    const expiresAt = new Date((iat + lifetime) * 1000);
    return { jti: randomUUID(), issuedAt: new Date(iat * 1000), expiresAt, key: await this.keys.signingKeyFor(expiresAt) };
  }

  /**
   * After the database refused to record `token` (its key is no longer the active one there:
   * another instance activated or withdrew a key): the same token with the key active now. The
   * `attempt`-th refusal; 503 when the keys keep changing (DECISIONS 12.1).
   */
  async rekey(token: PlannedAccessToken, attempt: number): Promise<PlannedAccessToken> {
    await this.keys.afterRefusal(attempt);
    return { ...token, key: await this.keys.signingKeyFor(token.expiresAt) };
  }

  /** Signs a person's tokens whose access token `plan` made and the caller recorded (DECISIONS 15.3, 15.4). */
  async signRecordedForPerson(
    person: Pick<UserRow, 'org_id' | 'user_name' | 'role'>,
    token: PlannedAccessToken,
    context: PersonTokenContext,
  ): Promise<TokenResponse> {
    const response = await this.sign({ org: person.org_id, subject: person.user_name, role: person.role, clientId: context.clientId }, token, {
      aud: context.clientId,
      azp: context.clientId,
      ...context.idTokenClaims,
    });
    this.metrics.tokensIssued.inc({ method: context.method });
    return response;
  }

  /**
   * Signs both tokens in the HSM and records the access token. `scope` lists the scopes the role had
   * at issue, for the client's information; authorization reads the live role on every request.
   */
  private async issue(
    subject: { org: string; subject: string; role: string; clientId?: string; accountId?: string; userId?: string; grantId?: string },
    orgSettings: OrganizationSettings,
    context: { sourceAddress: string; correlationId?: string; method: string; secretId?: string },
    idTokenClaims: Record<string, unknown> = {},
  ): Promise<TokenResponse> {
    let token = await this.plan(orgSettings);
    for (let attempt = 1; ; attempt++) {
      const response = await this.sign(subject, token, idTokenClaims);
      // Recorded only while its key is the active one and covers its expiry (DECISIONS 12.1), else signed again.
      const recorded = await this.writes.write({
        jti: token.jti,
        orgId: subject.org,
        accountId: subject.accountId,
        userId: subject.userId,
        grantId: subject.grantId,
        subjectName: subject.subject,
        issuedAt: token.issuedAt,
        expiresAt: token.expiresAt,
        kid: token.key.kid,
        ...context,
      });
      if (recorded) {
        this.metrics.tokensIssued.inc({ method: context.method });
        return response;
      }
      token = await this.rekey(token, attempt);
    }
  }

  /** The access token and the id_token of `token`, signed in the HSM at once, by its key. */
  private async sign(
    subject: { org: string; subject: string; role: string; clientId?: string },
    token: PlannedAccessToken,
    idTokenClaims: Record<string, unknown>,
  ): Promise<TokenResponse> {
    const iat = token.issuedAt.getTime() / 1000;
    const exp = token.expiresAt.getTime() / 1000;
    const iss = this.issuer(subject.org);
    const scope = (this.roles.find(subject.role)?.scopes ?? []).join(' ');
    const [accessToken, idToken] = await Promise.all([
      this.jws.sign(
        'at+jwt',
        {
          iss,
          sub: subject.subject,
          aud: this.config.publicBaseUrl,
          ...(subject.clientId ? { client_id: subject.clientId } : {}),
          org: subject.org,
          role: subject.role,
          scope,
          jti: token.jti,
          iat,
          exp,
        },
        token.key,
      ),
      this.jws.sign('JWT', { iss, sub: subject.subject, aud: subject.subject, iat, exp, org: subject.org, ...idTokenClaims }, token.key),
    ]);
    return { access_token: accessToken, id_token: idToken, token_type: 'Bearer', expires_in: exp - iat };
  }
}
