import type { FastifyRequest } from 'fastify';
import type { Actor } from '@app/common';

/**
 * How a person proved who they are: the id_token's `amr` values (RFC 8176). A passkey is `hwk` (a
 * key its authenticator holds); with the passkey alone, its user verification adds `user` (DECISIONS 14.5).
 */
export type AuthenticationMethod = 'pwd' | 'otp' | 'sc' | 'hwk' | 'user';

/** A person's browser session, opened by the hosted login page. */
export interface SignInSession {
  /** The session row's id: never the cookie's value, which is stored only as a hash. */
  id: string;
  org: string;
  userId: string;
  userName: string;
  /** When the person last proved who they are (the id_token's `auth_time`). */
  authTime: Date;
  amr: AuthenticationMethod[];
  idleExpiresAt: Date;
  absoluteExpiresAt: Date;
}

/** The cookie that carries a session: Secure, HttpOnly, SameSite=Strict, Path=/, no Domain. */
export const SESSION_COOKIE = '__Host-Http-session';

/**
 * What every sign-out answers (the login page's, the portal's, RP-initiated logout; DECISIONS 14.2):
 * the session cookie expired at once, with the name and attributes it was set with, so that the
 * browser forgets the ended session's secret (OWASP Session Management: logout).
 */
export const EXPIRED_SESSION_COOKIE = `${SESSION_COOKIE}=; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=0`;

/**
 * The port through which the authorization endpoint, RP-initiated logout, the admin API and the
 * portal read people's sessions; the hosted login page is the only place that opens them.
 */
export abstract class SignInSessions {
  /** The live session the request's cookie names, or null (unknown, ended, idle or past its absolute timeout). */
  abstract fromRequest(request: FastifyRequest): Promise<SignInSession | null>;
  /**
   * Ends one session at once, on every instance (sign-out, RP-initiated logout, an administrator),
   * with the grants applications hold through it; answers how many grants (0 when it was not live).
   */
  abstract end(sessionId: string, actor: Actor): Promise<number>;
}

/**
 * Where the authorization endpoint (or the portal) sends a person to sign in: the organization's
 * login page, which sends them back to `returnTo` once signed in. `returnTo` is a path on this
 * service (the login page accepts only its own authorization endpoint and /portal/, never another
 * origin); `forceLogin` asks for the credentials again even with a live session (`prompt=login`,
 * `max_age`); `loginHint` fills in the userName.
 */
export function loginLocation(org: string, returnTo: string, options: { forceLogin?: boolean; loginHint?: string } = {}): string {
  const query = new URLSearchParams({ return_to: returnTo });
  if (options.forceLogin) query.set('prompt', 'login');
  if (options.loginHint) query.set('login_hint', options.loginHint);
  return `/authentication/customer/${encodeURIComponent(org)}/login?${query.toString()}`;
}
