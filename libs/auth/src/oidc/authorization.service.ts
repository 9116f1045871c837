import { Injectable } from '@nestjs/common';
import { createHmac, hkdfSync, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { AuditLog } from '@app/audit';
import { OidcClient, SecretHasher } from '@app/accounts';
import { Clock, isOrgId, RequestOrigin } from '@app/common';
import { AppConfig } from '@app/config';
import { Database } from '@app/persistence';
import { loginLocation, SignInSession, SignInSessions } from '../sessions/sign-in-sessions';
import { TokenService } from '../tokens/token.service';
import { OidcClientCache } from './oidc-client.cache';
import { AuthorizationGrantRepository, RefreshTokenMode } from './authorization-grant.repository';
import {
  ParameterProblem,
  parsePrompt,
  parseScope,
  Prompt,
  RawParameters,
  repeatedParameter,
  S256_CHALLENGE,
  single,
  SUPPORTED_SCOPES,
} from './authorization-request';

/** An authorization code lives 60 seconds (DECISIONS 15.3; RFC 6749 4.1.2 says at most 10 minutes). */
export const CODE_LIFETIME_S = 60;

/**
 * How long the return from a sign-in that `prompt=login` or `max_age` asked for is recognised as
 * that sign-in's (its `login_after` marker): longer than a person takes to sign in, short enough
 * that an old marker does not stand in for a new sign-in.
 */
export const LOGIN_AFTER_LIFETIME_S = 600;

/** The longest return_to the login page takes back (libs/auth sign-in, return-to.ts). */
const MAX_RETURN_TO = 4096;

/** The acr values this OpenID Provider asserts, from weakest to strongest (DECISIONS 15.4). */
export const ACR_VALUES = {
  password: 'urn:credential-platform:acr:password',
  mfa: 'urn:credential-platform:acr:mfa',
  smartcard: 'urn:credential-platform:acr:smartcard',
} as const;

/** How strongly the person proved who they are, from the sign-in's amr (RFC 8176). */
export function acrFor(amr: readonly string[]): string {
  // A passkey (hwk) with the password or its own user verification is two factors, not a smart card (DECISIONS 14.5).
  if (!amr.includes('sc') && amr.includes('hwk') && (amr.includes('pwd') || amr.includes('user'))) return ACR_VALUES.mfa;
  if (amr.includes('sc') || amr.includes('hwk')) return ACR_VALUES.smartcard;
  if (amr.includes('pwd') && amr.includes('otp')) return ACR_VALUES.mfa;
  return ACR_VALUES.password;
}

/** What the authorization endpoint answers. */
export type AuthorizeOutcome =
  /** An error page: the request cannot be answered at a redirect URI the client is known to own. */
  | { kind: 'page'; status: number; title: string; message: string }
  /** 303 to the client (code or error) or to the login page. */
  | { kind: 'redirect'; location: string }
  /** The same request again from this site, so that the SameSite=Strict session cookie comes with it. */
  | { kind: 'bounce'; location: string };

interface ValidRequest {
  client: OidcClient;
  redirectUri: string;
  state?: string;
  nonce?: string;
  scope: string[];
  codeChallenge: string;
  prompts: Set<Prompt>;
  maxAge?: number;
  loginHint?: string;
  /** The request's `login_after` marker as sent: only trusted once its MAC is checked (loginAfter()). */
  loginAfter?: string;
}

class RedirectError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
  ) {
    super(description);
  }
}

/**
 * The authorization endpoint of the authorization code flow (RFC 6749 4.1, RFC 7636, OIDC Core 3.1;
 * DECISIONS 15.2, 15.3): validates the request, sends a person without a live session to the
 * organization's login page, and gives the client a single-use code bound to everything the token
 * endpoint must check.
 */
@Injectable()
export class AuthorizationService {
  /** The key of the `login_after` markers, derived from SECRET_PEPPER so that every instance checks what any issued. */
  private readonly markerKey: Buffer;

  constructor(
    config: AppConfig,
    private readonly clients: OidcClientCache,
    private readonly grants: AuthorizationGrantRepository,
    private readonly hasher: SecretHasher,
    private readonly tokens: TokenService,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
    private readonly db: Database,
    private readonly sessions: SignInSessions,
  ) {
    this.markerKey = Buffer.from(hkdfSync('sha256', config.secretPepper, Buffer.alloc(0), 'authorize-login-after/v1', 32));
  }

  async authorize(org: string, raw: RawParameters, request: FastifyRequest, origin: RequestOrigin): Promise<AuthorizeOutcome> {
    // Until the client and its redirect URI are known, nothing goes back to a redirect URI (RFC 6749 4.1.2.1).
    const refuse = (message: string): AuthorizeOutcome => ({ kind: 'page', status: 400, title: 'This sign-in request cannot be used', message });
    if (!isOrgId(org)) return refuse('The organization in the address is not valid; open the sign-in again from the application.');
    let clientId: string | undefined;
    let redirectUri: string | undefined;
    try {
      clientId = single(raw, 'client_id');
      redirectUri = single(raw, 'redirect_uri');
    } catch (error) {
      if (error instanceof ParameterProblem) return refuse(error.description);
      throw error;
    }
    if (!clientId) return refuse('The parameter client_id is missing: the application must say who it is.');
    const client = await this.clients.find(org, clientId);
    if (!client || client.disabled) {
      return refuse(`The application "${clientId.slice(0, 130)}" is not registered for sign-in in this organization.`);
    }
    if (!redirectUri) return refuse('The parameter redirect_uri is missing: the application must say where to return.');
    if (!client.settings.redirect_uris.includes(redirectUri)) {
      return refuse('The redirect_uri is not registered for this application; it must equal one of its registered redirect URIs exactly.');
    }

    // From here errors go back to the client's redirect URI, with its state when that could be read.
    let state: string | undefined;
    try {
      state = single(raw, 'state');
    } catch (error) {
      if (!(error instanceof ParameterProblem)) throw error;
      return this.redirectError(org, redirectUri, undefined, new RedirectError('invalid_request', error.description), client, origin);
    }
    let valid: ValidRequest;
    try {
      valid = this.validate(raw, client, redirectUri, state);
    } catch (error) {
      if (error instanceof RedirectError) return this.redirectError(org, redirectUri, state, error, client, origin);
      if (error instanceof ParameterProblem)
        return this.redirectError(org, redirectUri, state, new RedirectError('invalid_request', error.description), client, origin);
      throw error;
    }

    const found = await this.sessions.fromRequest(request);
    const session = found && found.org === org ? found : null;
    const now = this.clock.now();
    const loginAfter = this.loginAfter(org, valid);
    const fresh = (s: SignInSession) => loginAfter !== undefined && Math.floor(s.authTime.getTime() / 1000) >= loginAfter;
    const tooOld = (s: SignInSession) => valid.maxAge !== undefined && now.getTime() - s.authTime.getTime() > valid.maxAge * 1000;
    const reauthenticate = session !== null && (valid.prompts.has('login') || tooOld(session)) && !fresh(session);
    if (!session || reauthenticate) {
      if (valid.prompts.has('none')) {
        return this.redirectError(org, redirectUri, state, new RedirectError('login_required', 'The person is not signed in (prompt=none).'), client, origin);
      }
      // A navigation another site started comes without the SameSite=Strict cookie: ask again from here.
      if (!session && request.method === 'GET' && request.headers['sec-fetch-site'] === 'cross-site') {
        return { kind: 'bounce', location: this.authorizeUrl(org, valid, valid.loginAfter) };
      }
      const forceLogin = valid.prompts.has('login') || valid.maxAge !== undefined;
      const returnTo = this.authorizeUrl(org, valid, forceLogin ? this.loginMarker(org, valid, Math.floor(now.getTime() / 1000)) : undefined);
      if (returnTo.length > MAX_RETURN_TO) {
        const tooLong = new RedirectError(
          'invalid_request',
          `The request is too long to return to after sign-in (over ${MAX_RETURN_TO} characters); shorten state, nonce or login_hint.`,
        );
        return this.redirectError(org, redirectUri, state, tooLong, client, origin);
      }
      return { kind: 'redirect', location: loginLocation(org, returnTo, { forceLogin: forceLogin && session !== null, loginHint: valid.loginHint }) };
    }
    if (!client.settings.first_party) {
      // DECISIONS 15.1: no consent screen; a client that is not first-party is refused.
      return this.redirectError(
        org,
        redirectUri,
        state,
        new RedirectError('consent_required', 'This application is not marked first-party in this organization, and the platform does not ask for consent.'),
        client,
        origin,
      );
    }
    return { kind: 'redirect', location: await this.issueCode(org, valid, session, origin) };
  }

  private validate(raw: RawParameters, client: OidcClient, redirectUri: string, state: string | undefined): ValidRequest {
    const repeated = repeatedParameter(raw);
    if (repeated) throw new ParameterProblem(`The parameter ${repeated.slice(0, 64)} is given more than once; send it once (RFC 6749 3.1).`);
    if (raw.request !== undefined) throw new RedirectError('request_not_supported', 'Request objects (the request parameter) are not supported.');
    if (raw.request_uri !== undefined) throw new RedirectError('request_uri_not_supported', 'The request_uri parameter is not supported.');
    if (raw.registration !== undefined) throw new RedirectError('registration_not_supported', 'The registration parameter is not supported.');
    const responseType = single(raw, 'response_type');
    if (!responseType) throw new ParameterProblem('The parameter response_type is missing; use response_type=code.');
    if (responseType !== 'code') throw new RedirectError('unsupported_response_type', `response_type "${responseType}" is not supported; use code.`);
    const responseMode = single(raw, 'response_mode');
    if (responseMode !== undefined && responseMode !== 'query') throw new ParameterProblem('response_mode must be query (or left out).');
    const scopeText = single(raw, 'scope');
    if (!scopeText) throw new ParameterProblem('The parameter scope is missing; it must include openid.');
    const scope = parseScope(scopeText);
    if (!scope.includes('openid')) throw new RedirectError('invalid_scope', 'The scope must include openid.');
    const unknown = scope.filter((s) => !(SUPPORTED_SCOPES as readonly string[]).includes(s));
    if (unknown.length > 0) {
      throw new RedirectError(
        'invalid_scope',
        `Unknown scope ${unknown.map((s) => `"${s.slice(0, 40)}"`).join(', ')}; supported: ${SUPPORTED_SCOPES.join(', ')}.`,
      );
    }
    if (scope.includes('offline_access') && !client.settings.refresh_tokens) {
      throw new RedirectError('invalid_scope', 'offline_access: this application is not allowed refresh tokens in this organization.');
    }
    const method = single(raw, 'code_challenge_method');
    const codeChallenge = single(raw, 'code_challenge');
    if (!codeChallenge)
      throw new ParameterProblem('PKCE is required: send code_challenge (BASE64URL(SHA-256(code_verifier))) with code_challenge_method=S256.');
    if (method !== 'S256') {
      throw new ParameterProblem(
        method === undefined
          ? 'code_challenge_method is missing; it must be S256 (plain is not accepted).'
          : `code_challenge_method must be S256, not "${method}".`,
      );
    }
    if (!S256_CHALLENGE.test(codeChallenge)) throw new ParameterProblem('code_challenge must be 43 base64url characters: BASE64URL(SHA-256(code_verifier)).');
    const nonce = single(raw, 'nonce');
    const promptText = single(raw, 'prompt');
    const prompts = promptText === undefined ? new Set<Prompt>() : parsePrompt(promptText);
    const maxAgeText = single(raw, 'max_age');
    if (maxAgeText !== undefined && !/^[0-9]{1,9}$/.test(maxAgeText)) throw new ParameterProblem('max_age must be a number of seconds (0-999999999).');
    const loginHint = single(raw, 'login_hint');
    const loginAfter = single(raw, 'login_after');
    return {
      client,
      redirectUri,
      state,
      nonce: nonce || undefined,
      scope,
      codeChallenge,
      prompts,
      maxAge: maxAgeText === undefined ? undefined : Number(maxAgeText),
      loginHint: loginHint || undefined,
      loginAfter,
    };
  }

  /**
   * The `login_after` marker of a sign-in that `prompt=login` or `max_age` asks for (DECISIONS 15.2):
   * the time it was asked, with a MAC over that time and this very request (every other parameter of
   * its return URL), so that no request can make one up: `login_after=0` added by hand, or a marker
   * moved onto another request, is no marker at all, and the person signs in again.
   */
  private loginMarker(org: string, request: ValidRequest, asked: number): string {
    return `${asked}.${this.markerMac(org, request, asked)}`;
  }

  /** The time of the request's `login_after` marker when the service made it for this request within LOGIN_AFTER_LIFETIME_S; else undefined. */
  private loginAfter(org: string, request: ValidRequest): number | undefined {
    const match = /^([0-9]{1,12})\.([A-Za-z0-9_-]{43})$/.exec(request.loginAfter ?? '');
    if (!match) return undefined;
    const asked = Number(match[1]);
    const age = Math.floor(this.clock.now().getTime() / 1000) - asked;
    if (age < 0 || age > LOGIN_AFTER_LIFETIME_S) return undefined;
    const expected = Buffer.from(this.markerMac(org, request, asked));
    const given = Buffer.from(match[2]);
    return given.length === expected.length && timingSafeEqual(given, expected) ? asked : undefined;
  }

  private markerMac(org: string, request: ValidRequest, asked: number): string {
    return createHmac('sha256', this.markerKey)
      .update(`login-after|${asked}|${this.authorizeUrl(org, request, undefined)}`, 'utf8')
      .digest('base64url');
  }

  /**
   * This request as a GET URL on this service: where the login page returns the person. A forced
   * sign-in adds its `login_after` marker (loginMarker), so that the return is not sent to sign in
   * again (`prompt=login` and `max_age` are satisfied by a sign-in at or after the time it carries).
   */
  private authorizeUrl(org: string, request: ValidRequest, loginAfter: string | undefined): string {
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: request.client.clientId,
      redirect_uri: request.redirectUri,
      scope: request.scope.join(' '),
      code_challenge: request.codeChallenge,
      code_challenge_method: 'S256',
    });
    if (request.state !== undefined) query.set('state', request.state);
    if (request.nonce !== undefined) query.set('nonce', request.nonce);
    if (request.prompts.size > 0) query.set('prompt', [...request.prompts].join(' '));
    if (request.maxAge !== undefined) query.set('max_age', String(request.maxAge));
    if (request.loginHint !== undefined) query.set('login_hint', request.loginHint);
    if (loginAfter !== undefined) query.set('login_after', loginAfter);
    return `/authentication/customer/${org}/authorize?${query.toString()}`;
  }

  private async issueCode(org: string, request: ValidRequest, session: SignInSession, origin: RequestOrigin): Promise<string> {
    const code = randomBytes(32).toString('base64url');
    const now = this.clock.now();
    const refreshTokens: RefreshTokenMode = !request.client.settings.refresh_tokens ? 'none' : request.scope.includes('offline_access') ? 'offline' : 'session';
    const grantId = randomUUID();
    // The code and its audit event commit together.
    await this.db.transaction(async (tx) => {
      await this.grants.insert(
        {
          id: grantId,
          orgId: org,
          accountId: request.client.accountId,
          userId: session.userId,
          sessionId: session.id,
          codeHash: this.hasher.hash(code),
          redirectUri: request.redirectUri,
          codeChallenge: request.codeChallenge,
          nonce: request.nonce,
          scope: request.scope.join(' '),
          authTime: session.authTime,
          amr: [...session.amr],
          refreshTokens,
          now,
          codeExpiresAt: new Date(now.getTime() + CODE_LIFETIME_S * 1000),
        },
        tx,
      );
      await this.audit.record(
        {
          org,
          actor: session.userName,
          action: 'authorization_code.issue',
          target: request.client.clientId,
          outcome: 'success',
          sourceAddress: origin.sourceAddress,
          correlationId: origin.correlationId,
          details: { grantId, scope: request.scope.join(' '), amr: session.amr, refreshTokens },
        },
        tx,
      );
    });
    return withParameters(request.redirectUri, { code, state: request.state, iss: this.tokens.issuer(org) });
  }

  private async redirectError(
    org: string,
    redirectUri: string,
    state: string | undefined,
    error: RedirectError,
    client: OidcClient,
    origin: RequestOrigin,
  ): Promise<AuthorizeOutcome> {
    await this.audit.record({
      org,
      actor: client.clientId,
      action: 'authorization.deny',
      target: client.clientId,
      outcome: 'failure',
      sourceAddress: origin.sourceAddress,
      correlationId: origin.correlationId,
      details: { error: error.error, description: error.description },
    });
    return {
      kind: 'redirect',
      location: withParameters(redirectUri, { error: error.error, error_description: error.description, state, iss: this.tokens.issuer(org) }),
    };
  }
}

/**
 * The redirect URI with response parameters added to its query (RFC 6749 4.1.2, RFC 9207): the
 * registered string is kept as it is, its own query included.
 */
export function withParameters(uri: string, parameters: Record<string, string | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(parameters)) if (value !== undefined) query.set(name, value);
  return `${uri}${uri.includes('?') ? '&' : '?'}${query.toString()}`;
}
