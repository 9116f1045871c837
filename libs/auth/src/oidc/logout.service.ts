import { Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { AuditLog } from '@app/audit';
import { OidcClient } from '@app/accounts';
import { isOrgId, RequestOrigin } from '@app/common';
import { readCookie } from '../sessions/sign-in-session.service';
import { SESSION_COOKIE, SignInSessions } from '../sessions/sign-in-sessions';
import { LoginFormProtection } from '../sign-in/login-form-protection';
import { JwsService } from '../tokens/jws.service';
import { TokenService } from '../tokens/token.service';
import { OidcClientCache } from './oidc-client.cache';
import { withParameters } from './authorization.service';

const LIMITS: Record<string, number> = {
  id_token_hint: 8192,
  post_logout_redirect_uri: 2000,
  state: 1024,
  client_id: 130,
  logout_hint: 128,
  ui_locales: 100,
  confirm: 3,
  form_token: 64,
};

/** A confirmation whose POST failed the login form's CSRF rule (DECISIONS 14.3): nothing ended. */
const REFUSED_CONFIRMATION = 'This sign-out did not come from this page, so you are still signed in. Confirm here to sign out.';

export type LogoutOutcome =
  | { kind: 'page'; status: number; title: string; message: string }
  /** Back to the client; `expireCookie`: the answer expires the browser's session cookie too. */
  | { kind: 'redirect'; location: string; expireCookie: boolean }
  | { kind: 'bounce'; location: string }
  /**
   * The person confirms with a form posted to this endpoint with these fields (and the form token);
   * `refused`: a confirmation came that failed the CSRF rule, and is asked again (403).
   */
  | { kind: 'confirm'; fields: Record<string, string>; refused?: string }
  | { kind: 'signed-out'; expireCookie: boolean };

/**
 * RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0; DECISIONS 15.6): ends the person's
 * session on every instance and revokes the refresh tokens bound to it, then returns to a
 * post-logout redirect URI registered for the client (exact match), or shows that the person is
 * signed out. The person always confirms first, on a form protected as the login form is
 * (DECISIONS 14.3): an id_token_hint is no proof that the person, or their application, asked.
 */
@Injectable()
export class LogoutService {
  constructor(
    private readonly clients: OidcClientCache,
    private readonly jws: JwsService,
    private readonly tokens: TokenService,
    private readonly audit: AuditLog,
    private readonly sessions: SignInSessions,
    private readonly forms: LoginFormProtection,
  ) {}

  async logout(org: string, raw: Record<string, unknown>, request: FastifyRequest, origin: RequestOrigin): Promise<LogoutOutcome> {
    const refuse = (message: string): LogoutOutcome => ({ kind: 'page', status: 400, title: 'This sign-out request cannot be used', message });
    if (!isOrgId(org)) return refuse('The organization in the address is not valid.');
    const params: Record<string, string> = {};
    for (const [name, value] of Object.entries(raw)) {
      if (Array.isArray(value)) return refuse(`The parameter ${name.slice(0, 64)} is given more than once; send it once.`);
      if (typeof value !== 'string') continue;
      if (LIMITS[name] !== undefined && value.length > LIMITS[name]) return refuse(`The parameter ${name} is longer than ${LIMITS[name]} characters.`);
      params[name] = value;
    }
    let hint: { sub: string; aud: string } | undefined;
    if (params.id_token_hint) {
      const verified = this.jws.verify(params.id_token_hint, 'JWT');
      const claims = verified.ok ? verified.claims : undefined;
      if (!claims || claims.iss !== this.tokens.issuer(org) || typeof claims.sub !== 'string' || typeof claims.aud !== 'string') {
        return refuse('The id_token_hint is not an id_token this organization issued.');
      }
      hint = { sub: claims.sub, aud: claims.aud };
    }
    if (hint && params.client_id && params.client_id !== hint.aud) return refuse('client_id differs from the audience of the id_token_hint.');
    const clientId = params.client_id ?? hint?.aud;
    let client: OidcClient | undefined;
    if (clientId) {
      client = await this.clients.find(org, clientId);
      if (!client) return refuse(`The application "${clientId.slice(0, 130)}" is not registered for sign-in in this organization.`);
    }
    const returnTo = params.post_logout_redirect_uri;
    if (returnTo !== undefined) {
      if (!client) return refuse('post_logout_redirect_uri needs id_token_hint or client_id, to know which application it belongs to.');
      if (!client.settings.post_logout_redirect_uris.includes(returnTo)) {
        return refuse('The post_logout_redirect_uri is not registered for this application; it must equal one of its registered URIs exactly.');
      }
    }

    const found = await this.sessions.fromRequest(request);
    const session = found && found.org === org ? found : null;
    if (!session && request.method === 'GET' && request.headers['sec-fetch-site'] === 'cross-site') {
      return { kind: 'bounce', location: `/authentication/customer/${org}/end-session?${new URLSearchParams(params).toString()}` };
    }
    // The cookie goes with the session it ended, and so does one that names no live session any more;
    // a live session of another organization is not this endpoint's to end, nor its cookie.
    let expireCookie = !found && readCookie(request.headers.cookie, SESSION_COOKIE) !== undefined;
    if (session) {
      // OIDC RP-Initiated Logout 1.0, 2: the OP asks the person. Any id_token of theirs, expired or
      // not, reached another site's hands long ago (the application, a log), and a same-site sibling
      // origin can post the form with the SameSite=Strict cookie: the confirmation must pass the
      // login form's rule (Fetch metadata / Origin, and the form token bound to the pre-session cookie).
      const asked = request.method === 'POST' && params.confirm === 'yes';
      if (!asked || !this.forms.formPasses(org, request, params.form_token)) {
        const { confirm: _confirm, form_token: _token, ...fields } = params;
        return { kind: 'confirm', fields, ...(asked ? { refused: REFUSED_CONFIRMATION } : {}) };
      }
      const revokedGrants = await this.sessions.end(session.id, {
        name: session.userName,
        sourceAddress: origin.sourceAddress,
        correlationId: origin.correlationId,
      });
      expireCookie = true;
      await this.audit.record({
        org,
        actor: session.userName,
        action: 'oidc.logout',
        target: client?.clientId ?? session.userName,
        outcome: 'success',
        sourceAddress: origin.sourceAddress,
        correlationId: origin.correlationId,
        details: { sessionId: session.id, revokedGrants },
      });
    }
    if (returnTo !== undefined) return { kind: 'redirect', location: withParameters(returnTo, { state: params.state }), expireCookie };
    return { kind: 'signed-out', expireCookie };
  }
}
