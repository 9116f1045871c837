import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { accessRuleOf, DomainError, Principal, PRINCIPAL_KEY } from '@app/common';
import { AccessTokenValidator } from '../tokens/access-token-validator';
import { SubjectState } from '../tokens/token.repository';
import { CookieRequest, SessionAuthentication } from '../sessions/session-authentication';

const REALM = 'credential-platform';

/**
 * Global guard, deny by default: every route needs a valid bearer access token unless it is marked
 * @Public(). On failure: 401 with a WWW-Authenticate that names the failed rule (RFC 6750 3.1).
 * On the admin and credential-management APIs, a request without an Authorization header may
 * instead carry a person's session cookie (DECISIONS 11.1): the same principal as their token's,
 * so the same access policy, permissions and audit follow.
 */
@Injectable()
export class BearerGuard implements CanActivate {
  constructor(
    private readonly validator: AccessTokenValidator,
    private readonly sessions: SessionAuthentication,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const rule = accessRuleOf(context);
    if (rule?.kind === 'public') return true;
    const request = context.switchToHttp().getRequest<CookieRequest & { headers: Record<string, string | undefined> } & Record<string, unknown>>();
    if (this.sessions.offersSession(request)) {
      const { session, state } = await this.sessions.authenticate(request);
      request[PRINCIPAL_KEY] = principalOf(state, { sessionId: session.id });
      return true;
    }
    const header = request.headers.authorization;
    // The header's syntax is RFC 6750's b64token; a token spelled other than canonically is then invalid_token (DECISIONS 3.4).
    const match = header ? /^Bearer +([A-Za-z0-9_.~+/-]+=*) *$/i.exec(header) : null;
    if (!match) {
      throw new DomainError('UNAUTHENTICATED', 'This request needs the header Authorization: Bearer <access token>.', {
        'WWW-Authenticate': header
          ? `Bearer realm="${REALM}", error="invalid_request", error_description="The Authorization header is not a Bearer token."`
          : `Bearer realm="${REALM}"`,
      });
    }
    const result = await this.validator.validate(match[1], true);
    if (!result.ok) throw invalidToken(result.description);
    request[PRINCIPAL_KEY] = principalOf(result.state, { tokenId: result.claims.jti });
    return true;
  }
}

/** The caller as a token's or a session's live subject makes it: one shape, whichever credential. */
function principalOf(state: SubjectState, credential: { tokenId: string } | { sessionId: string }): Principal {
  return {
    kind: state.subject_kind,
    subjectId: state.subject_id,
    name: state.subject_name,
    org: state.org_id,
    // Read live from the account or user row, so a role change applies to tokens already issued.
    role: state.role,
    organizationAdministrator: state.organization_administrator,
    platformAdministrator: state.platform_administrator,
    groups: state.groups,
    applicationIdPolicy: state.application_id_policy ?? 'any',
    ...credential,
  };
}

export function invalidToken(description: string): DomainError {
  return new DomainError('UNAUTHENTICATED', description, {
    'WWW-Authenticate': `Bearer realm="${REALM}", error="invalid_token", error_description="${description}"`,
  });
}
