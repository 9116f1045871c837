import { Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { DomainError, forbidden, routeFamilyOfRequest, RoutedRequest } from '@app/common';
import { AuditLog } from '@app/audit';
import { AppConfig } from '@app/config';
import { SignInFactorPolicy } from '../grants/sign-in-factor.policy';
import { SubjectState, TokenRepository } from '../tokens/token.repository';
import { readCookie } from './sign-in-session.service';
import { SESSION_COOKIE, SignInSession, SignInSessions } from './sign-in-sessions';

/** The methods a cookie-authenticated call may use; only POST, PUT, PATCH and DELETE change state. */
const SAFE_METHODS = new Set(['GET', 'HEAD']);
const STATE_CHANGING_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** What the cookie check reads of a request. */
export type CookieRequest = RoutedRequest & { method: string; headers: Record<string, string | string[] | undefined>; ip?: string; id?: unknown };

/** A request a live session authenticates: the session and its person's live state. */
export interface SessionCaller {
  session: SignInSession;
  state: SubjectState;
}

/**
 * A person's session cookie as a credential of the admin and credential-management APIs (DECISIONS
 * 11.1, issue 24 item 1), declared once for the bearer guard. The cookie is SameSite=Strict, and a
 * call that carries it must also prove it comes from the service's own pages: the Application-ID
 * header the API requires (a cross-site form cannot send a header, and a cross-site fetch that
 * sends one needs a CORS preflight the service never grants) and a same-origin `Origin` or
 * `Sec-Fetch-Site` (OWASP CSRF prevention, "verifying origin with standard headers" and Fetch
 * Metadata). A state-changing call with neither header is refused; a safe one (GET, HEAD) without
 * them is accepted (an old browser's script on the service's own page: it still sends Application-ID,
 * so a typed URL or a link, which cannot, is refused). Every refusal is a 403 that says which rule failed.
 */
@Injectable()
export class SessionAuthentication {
  /** The service's own origins: its public and its authentication base URL (one in a single-host deployment; with the loopback aliases in the embedded default). */
  private readonly ownOrigins: Set<string>;

  constructor(
    config: AppConfig,
    private readonly sessions: SignInSessions,
    private readonly tokens: TokenRepository,
    private readonly factors: SignInFactorPolicy,
    private readonly audit: AuditLog,
  ) {
    this.ownOrigins = new Set([...config.publicOrigins, ...config.authOrigins]);
  }

  /** Whether the request offers a session cookie where one counts: no Authorization header, an API that takes cookies. */
  offersSession(request: CookieRequest): boolean {
    return (
      request.headers.authorization === undefined &&
      routeFamilyOfRequest(request).sessionCookie &&
      readCookie(headerText(request.headers.cookie), SESSION_COOKIE) !== undefined
    );
  }

  /** The session's caller, after the CSRF rules; 403 naming the failed rule, 401 when the session is not live. */
  async authenticate(request: CookieRequest): Promise<SessionCaller> {
    const refusal = this.refusal(request);
    if (refusal) {
      await this.recordRefusal(request, refusal);
      throw forbidden(`A call with the session cookie ${refusal}. (DECISIONS 11.1)`);
    }
    const session = await this.sessions.fromRequest(request as unknown as FastifyRequest);
    if (!session) throw sessionEnded('The session has ended or expired (or the cookie is not one the service issued); sign in again.');
    const state = await this.tokens.findUserState(session.userId, session.org);
    if (!state || state.disabled) throw sessionEnded('The user of this session is disabled or no longer exists.');
    // A session opened with a password alone (a cardholder, where the organization allows it) is not
    // enough once the person has become an operator or an administrator: the same rule as at sign-in.
    if (!session.amr.some((method) => method !== 'pwd') && state.user_type && this.factors.refusal({ ...state, user_type: state.user_type }, 'password')) {
      throw sessionEnded(
        'This session was opened with a password alone, which is no longer enough for this user; sign in again with a one-time code or a smart card.',
      );
    }
    return { session, state };
  }

  /**
   * Records a refused call for the person whose live session the cookie names (a forged request
   * targets them: their organization's administrators see it); a cookie of no live session is not
   * recorded, as a request without credentials is not.
   */
  private async recordRefusal(request: CookieRequest, refusal: string): Promise<void> {
    const session = await this.sessions.fromRequest(request as unknown as FastifyRequest);
    if (!session) return;
    await this.audit.record({
      org: session.org,
      actor: session.userName,
      action: 'session.request_refused',
      target: request.url.split('?')[0].slice(0, 256),
      outcome: 'failure',
      sourceAddress: request.ip,
      correlationId: request.id === undefined ? undefined : String(request.id),
      details: { method: request.method.slice(0, 16), rule: refusal, session: session.id },
    });
  }

  /** Why a cookie-authenticated request is refused, or undefined. */
  private refusal(request: CookieRequest): string | undefined {
    const method = request.method.toUpperCase();
    if (!SAFE_METHODS.has(method) && !STATE_CHANGING_METHODS.has(method))
      return `is accepted only with GET, HEAD, POST, PUT, PATCH or DELETE, not ${method.slice(0, 16)}`;
    const applicationId = request.headers['application-id'];
    if (applicationId === undefined || headerText(applicationId).trim() === '') {
      return 'needs the Application-ID header (and Application-Version), which every call to this API carries: a page of another site cannot send it';
    }
    const origin = request.headers.origin;
    if (origin !== undefined && !this.ownOrigins.has(headerText(origin))) {
      return `must come from the service's own origin (${[...this.ownOrigins].join(' or ')}), not ${headerText(origin).slice(0, 100)}`;
    }
    const site = request.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && !(site === 'none' && SAFE_METHODS.has(method))) {
      return `must come from the service's own pages: Sec-Fetch-Site is ${headerText(site).slice(0, 32)}, not same-origin`;
    }
    if (STATE_CHANGING_METHODS.has(method) && origin === undefined && site !== 'same-origin') {
      return `that changes something (${method}) needs Origin: <the service's origin> or Sec-Fetch-Site: same-origin, which browsers send`;
    }
    return undefined;
  }
}

function headerText(value: string | string[] | undefined): string {
  return Array.isArray(value) ? value.join(', ') : (value ?? '');
}

function sessionEnded(description: string): DomainError {
  return new DomainError('UNAUTHENTICATED', description, { 'WWW-Authenticate': 'Bearer realm="credential-platform"' });
}
