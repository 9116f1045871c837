import { Injectable } from '@nestjs/common';
import { Clock, RequestOrigin } from '@app/common';
import { SystemAccountRow } from '@app/accounts';
import { AuditLog } from '@app/audit';
import { ChangeFeed, Database } from '@app/persistence';
import { AccessTokenValidator, isAccessTokenJti } from './access-token-validator';
import { JwsService } from './jws.service';
import { TokenRepository } from './token.repository';
import { CodeGrantService } from '../oidc/code-grant.service';

/** 256 random bits in base64url, as the authorization code flow's refresh tokens are. */
const REFRESH_TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/** RFC 7662 introspection and RFC 7009 revocation for authenticated clients (DECISIONS 3.4). */
@Injectable()
export class TokenIntrospection {
  constructor(
    private readonly validator: AccessTokenValidator,
    private readonly jws: JwsService,
    private readonly tokens: TokenRepository,
    private readonly audit: AuditLog,
    private readonly changes: ChangeFeed,
    private readonly clock: Clock,
    private readonly db: Database,
    private readonly codeGrants: CodeGrantService,
  ) {}

  /** Active only for a live token of the caller's organization; never counts as a use. */
  async introspect(token: string, callerOrg: string): Promise<Record<string, unknown>> {
    const result = await this.validator.validate(token, false);
    if (!result.ok || result.claims.org !== callerOrg) return { active: false };
    const { claims } = result;
    return {
      active: true,
      token_type: 'Bearer',
      scope: claims.scope,
      client_id: claims.client_id,
      sub: claims.sub,
      aud: claims.aud,
      iss: claims.iss,
      jti: claims.jti,
      iat: claims.iat,
      exp: claims.exp,
      org: claims.org,
      role: result.state.role,
    };
  }

  /**
   * Revokes only tokens issued to the calling client (their signed `client_id` names it, and their row
   * agrees: TokenRepository.revoke); anything else is a silent no-op (RFC 7009 2.2). The revocation
   * and its audit event commit together.
   */
  async revoke(token: string, caller: SystemAccountRow, origin: RequestOrigin): Promise<void> {
    // A refresh token of the authorization code flow is opaque: never a JWS (DECISIONS 15.5).
    if (REFRESH_TOKEN_SHAPE.test(token)) return this.codeGrants.revokeRefreshToken(token, caller, origin);
    const verified = this.jws.verify(token, 'at+jwt');
    if (!verified.ok || verified.claims.client_id !== caller.client_id || !isAccessTokenJti(verified.claims.jti)) return;
    const jti = verified.claims.jti;
    await this.db.transaction(async (tx) => {
      if (!(await this.tokens.revoke(jti, { accountId: caller.id, orgId: caller.org_id }, this.clock.now(), tx))) return;
      await this.audit.record({ org: caller.org_id, actor: caller.client_id, action: 'token.revoke', target: jti, outcome: 'success', ...origin }, tx);
      this.changes.publishOnCommit(tx, 'token', [jti]);
    });
  }
}
