import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Clock } from '@app/common';
import { AppConfig } from '@app/config';
import { LOGGER, Logger } from '@app/observability';
import { readCookie } from '../sessions/sign-in-session.service';

/**
 * The pre-session cookie of the login form (DECISIONS 14.3): 128 random bits, __Host-, HttpOnly,
 * SameSite=Strict. The form's token is an HMAC of it, so a page of another site can neither read
 * nor forge a token that matches the victim's cookie (login CSRF; OWASP "signed double-submit").
 */
export const FORM_COOKIE = '__Host-Http-login-form';
const FORM_COOKIE_VALUE = /^[A-Za-z0-9_-]{22}$/;
/** How long the password step's proof lasts while the person opens their authenticator. */
const STEP_LIFETIME_MS = 5 * 60 * 1000;

/** Who passed the password step, carried to the code step in a MAC'ed hidden field. */
export interface PasswordStep {
  userId: string;
  userName: string;
}

/**
 * Login CSRF and the two-step state of the hosted login page, without server-side state: the form
 * token and the step token are HMACs under a key derived from SECRET_PEPPER (HKDF, its own label),
 * so every instance checks what any instance issued. The step token is bound to the organization,
 * to the browser's pre-session cookie and to five minutes; the one-time code it leads to is single
 * use in the database, and every wrong code counts toward the lockout.
 */
@Injectable()
export class LoginFormProtection {
  private readonly key: Buffer;
  private readonly authOrigin: string;
  private readonly authOrigins: Set<string>;

  constructor(
    config: AppConfig,
    private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.key = Buffer.from(hkdfSync('sha256', config.secretPepper, Buffer.alloc(0), 'hosted-login-form/v1', 32));
    this.authOrigin = new URL(config.authBaseUrl).origin;
    this.authOrigins = new Set(config.authOrigins);
  }

  /** The request's pre-session cookie value, if it has a well-formed one. */
  formCookie(cookieHeader: string | undefined): string | undefined {
    const value = readCookie(cookieHeader, FORM_COOKIE);
    return value && FORM_COOKIE_VALUE.test(value) ? value : undefined;
  }

  newFormCookie(): string {
    return randomBytes(16).toString('base64url');
  }

  /** The browser's pre-session cookie, set now (on `reply`) when it has none. */
  formCookieFor(request: FastifyRequest, reply: FastifyReply): string {
    const existing = this.formCookie(request.headers.cookie);
    if (existing) return existing;
    const created = this.newFormCookie();
    void reply.header('Set-Cookie', `${FORM_COOKIE}=${created}; Path=/; Secure; HttpOnly; SameSite=Strict`);
    return created;
  }

  /**
   * Whether a form POST passes the login form's CSRF rule (DECISIONS 14.3): no cross-site Fetch
   * metadata or foreign Origin, and the form token of this organization and this browser's cookie.
   */
  formPasses(org: string, request: FastifyRequest, token: string | undefined): boolean {
    return this.crossSiteRefusal(request.headers) === undefined && this.formTokenMatches(org, this.formCookie(request.headers.cookie), token);
  }

  formToken(org: string, formCookie: string): string {
    return this.mac(`form|${org}|${formCookie}`);
  }

  /** Whether `token` is the form token of this organization and this browser's cookie. */
  formTokenMatches(org: string, formCookie: string | undefined, token: string | undefined): boolean {
    if (!formCookie || !token) return false;
    return equal(token, this.formToken(org, formCookie));
  }

  /**
   * The Fetch metadata and Origin rules (DECISIONS 14.3): a browser's cross-site POST says so in
   * Sec-Fetch-Site, and its Origin names another origin. Requests without either header (not a
   * browser, or an old one) are left to the form token.
   */
  crossSiteRefusal(headers: Record<string, string | string[] | undefined>): string | undefined {
    const site = headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && site !== 'none') return `Sec-Fetch-Site is ${String(site)}`;
    const origin = headers.origin;
    if (origin !== undefined && !this.authOrigins.has(String(origin))) return `Origin ${String(origin).slice(0, 100)} is not ${this.authOrigin}`;
    return undefined;
  }

  /**
   * When the form came from this service's own page, but at another host name than the service's
   * (opened at 127.0.0.1 while AUTH_BASE_URL says localhost, or behind a proxy that AUTH_BASE_URL does
   * not name): what the page says instead of "expired", so that the person opens the right address;
   * the log records it with the address to configure. Undefined for any other refusal.
   */
  hostMismatch(headers: Record<string, string | string[] | undefined>): string | undefined {
    const origin = headers.origin;
    if (typeof origin !== 'string' || this.authOrigins.has(origin) || headers['sec-fetch-site'] !== 'same-origin') return undefined;
    const seen = origin.slice(0, 100);
    this.logger.warn(
      { origin: seen, authBaseUrl: this.authOrigin },
      'a sign-in form came from another host name than AUTH_BASE_URL names: refused; open the service at that address, or set AUTH_BASE_URL to the one people use',
    );
    return `This page was opened at ${seen}, but this service's address is ${this.authOrigin}, so the form was refused. Open ${this.authOrigin} and sign in there.`;
  }

  stepToken(org: string, formCookie: string, step: PasswordStep): string {
    const payload = Buffer.from(JSON.stringify({ u: step.userId, n: step.userName, e: this.clock.now().getTime() + STEP_LIFETIME_MS })).toString('base64url');
    return `${payload}.${this.mac(`step|${org}|${formCookie}|${payload}`)}`;
  }

  /** The password step a step token carries, when it is this organization's and browser's and not expired. */
  readStepToken(org: string, formCookie: string | undefined, token: string | undefined): PasswordStep | undefined {
    if (!formCookie || !token || token.length > 1024) return undefined;
    const [payload, mac, extra] = token.split('.');
    if (!payload || !mac || extra !== undefined || !equal(mac, this.mac(`step|${org}|${formCookie}|${payload}`))) return undefined;
    try {
      const { u, n, e } = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { u: unknown; n: unknown; e: unknown };
      if (typeof u !== 'string' || typeof n !== 'string' || typeof e !== 'number' || e <= this.clock.now().getTime()) return undefined;
      return { userId: u, userName: n };
    } catch {
      return undefined;
    }
  }

  private mac(text: string): string {
    return createHmac('sha256', this.key).update(text, 'utf8').digest('base64url');
  }
}

function equal(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
