import type { BlockList } from 'node:net';
import { Body, Controller, Get, Headers, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Audited } from '@app/audit';
import { OrganizationService } from '@app/accounts';
import { CorrelationId, DomainError, PathFormats, Public, SourceAddress } from '@app/common';
import { AppConfig } from '@app/config';
import { SignInSessionService } from '../sessions/sign-in-session.service';
import { EXPIRED_SESSION_COOKIE, SESSION_COOKIE, SignInSession } from '../sessions/sign-in-sessions';
import { LoginFormProtection } from './login-form-protection';
import {
  LOGIN_STYLESHEET,
  LOGIN_STYLESHEET_PATH,
  PageFrame,
  codeForm,
  messagePage,
  passkeyForm,
  passwordForm,
  sendPage,
  sendUnknownOrganization,
  signedInPage,
} from './login-page';
import { LoginOutcome, LoginService } from './login.service';
import { PasskeyCeremonies } from './passkeys/passkey-ceremonies';
import { EnrolmentService } from './enrolment/enrolment.service';
import { FactorStepPages } from './enrolment/factor-step-pages';
import type { PasswordStep } from './login-form-protection';
import { safeReturnTo } from './return-to';
import { presentedCertificate, trustedPeers } from './client-certificate';

const REFUSED_FORM = 'This sign-in form has expired or did not come from this page. Here is a new one: please sign in again.';
/** A sign-out or a session's end whose form did not come from this page (login CSRF rules). */
const REFUSED_ACTION = 'This request did not come from this page, so nothing was changed.';

type Headers_ = Record<string, string | string[] | undefined>;

/**
 * The hosted login page per organization (DECISIONS 14): `GET|POST /authentication/customer/{org}/login`,
 * sign-out, and the person's own sessions, as server-rendered HTML that needs no script. Public to
 * the bearer guard: the page authenticates people itself, and its POSTs are protected against login
 * CSRF by Fetch metadata / Origin and a form token bound to a pre-session cookie.
 */
@ApiExcludeController()
@Public()
@Controller()
export class LoginController {
  /** The peers whose X-Client-Certificate is read: TRUSTED_PROXIES when CLIENT_CERTIFICATE_FROM_PROXY, else nobody. */
  private readonly trustedProxies: BlockList;

  constructor(
    private readonly login: LoginService,
    private readonly sessions: SignInSessionService,
    private readonly forms: LoginFormProtection,
    private readonly organizations: OrganizationService,
    private readonly ceremonies: PasskeyCeremonies,
    private readonly enrolment: EnrolmentService,
    private readonly factorPages: FactorStepPages,
    config: AppConfig,
  ) {
    this.trustedProxies = trustedPeers(config.clientCertificateFromProxy ? config.trustedProxies : []);
  }

  @Get(LOGIN_STYLESHEET_PATH.slice(1))
  stylesheet(@Res() reply: FastifyReply): void {
    void reply.code(200).header('Content-Type', 'text/css; charset=utf-8').header('Cache-Control', 'public, max-age=3600').send(LOGIN_STYLESHEET);
  }

  @Get('authentication/customer/:org/login')
  async form(@Param('org') org: string, @Query() query: Record<string, unknown>, @Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const frame = await this.frame(org);
    if (!frame) return this.unknownOrganization(reply, org);
    const returnTo = single(query.return_to);
    const forceLogin = single(query.prompt) === 'login';
    const formCookie = this.formCookieFor(request, reply);
    const session = await this.sessionOf(request, org);
    if (session && !forceLogin) {
      const target = safeReturnTo(org, returnTo);
      if (target) return void reply.code(303).header('Location', target).header('Cache-Control', 'no-store').send();
      return this.signedIn(reply, org, frame, session, formCookie);
    }
    this.html(
      reply,
      200,
      passwordForm({
        ...this.formView(org, frame, formCookie, returnTo),
        userName: single(query.login_hint)?.slice(0, 128),
        passkey: await this.passwordlessForm(org, formCookie, returnTo),
      }),
    );
  }

  @Post('authentication/customer/:org/login')
  @Audited('sign_in.success', 'sign_in.fail', 'sign_in.lockout', 'sign_in.logout')
  @HttpCode(200)
  async submit(
    @Param('org') org: string,
    @Headers() headers: Headers_,
    @Body() body: unknown,
    @SourceAddress() sourceAddress: string,
    @CorrelationId() correlationId: string,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const frame = await this.frame(org);
    if (!frame) return this.unknownOrganization(reply, org);
    const params = formParams(body);
    const returnTo = params.return_to;
    const checked = this.checkForm(org, headers, params, request, reply);
    if (!checked.ok) {
      return this.html(
        reply,
        403,
        passwordForm({
          ...this.formView(org, frame, checked.formCookie, returnTo),
          error: this.forms.hostMismatch(headers) ?? REFUSED_FORM,
          userName: params.userName,
        }),
      );
    }
    const formCookie = checked.formCookie;
    const origin = { sourceAddress, correlationId, userAgent: single(headers['user-agent']) };
    if (params.step === 'passkey' && params.step_token === undefined) {
      // A passkey alone, from the first page (DECISIONS 14.5).
      const outcome = await this.login.withPasskeyAlone(org, params.response, formCookie, origin);
      return this.answer(reply, request, org, frame, formCookie, returnTo, outcome, undefined);
    }
    if (params.step === 'code' || params.step === 'passkey') {
      const step = this.forms.readStepToken(org, formCookie, params.step_token);
      if (!step) {
        return this.html(
          reply,
          400,
          passwordForm({ ...this.formView(org, frame, formCookie, returnTo), error: 'Your sign-in took too long. Please start again.' }),
        );
      }
      const outcome =
        params.step === 'passkey'
          ? await this.login.withPasskey(org, step, params.response, formCookie, origin)
          : await this.login.withCode(org, step, params.code, origin);
      if (outcome.kind === 'failed') {
        return this.html(reply, 200, await this.secondStepPage(org, frame, formCookie, returnTo, step, params.step_token!, outcome.message));
      }
      return this.answer(reply, request, org, frame, formCookie, returnTo, outcome, step.userName);
    }
    const outcome = await this.login.withPassword(org, params.userName, params.password, origin);
    if (outcome.kind === 'code') {
      const stepToken = this.forms.stepToken(org, formCookie, outcome.step);
      return this.html(reply, 200, await this.secondStepPage(org, frame, formCookie, returnTo, outcome.step, stepToken));
    }
    if (outcome.kind === 'enrol') {
      // An administrator's mark (DECISIONS 14.5): the factor step, before any session opens.
      const step = await this.enrolment.startFactorStep(org, outcome.step, 'mark', formCookie, { returnTo: returnTo?.slice(0, 4096) });
      const enrolFrame = { ...frame, title: 'Set up your sign-in' };
      return this.html(
        reply,
        200,
        await this.factorPages.render(org, enrolFrame, formCookie, '', step, 'Your administrator asks you to add a second factor before you sign in.'),
      );
    }
    return this.answer(reply, request, org, frame, formCookie, returnTo, outcome, params.userName);
  }

  /**
   * The second step after the password: the one-time code, and "Use a passkey" (a new challenge for
   * this person and flow) when they hold one; only the passkey when it is their only second factor.
   */
  private async secondStepPage(
    org: string,
    frame: PageFrame,
    formCookie: string,
    returnTo: string | undefined,
    step: PasswordStep,
    stepToken: string,
    error?: string,
  ): Promise<string> {
    const formToken = this.forms.formToken(org, formCookie);
    const { code, passkey } = await this.login.secondFactorsOf(org, step.userId);
    const passkeyHtml = passkey
      ? passkeyForm({
          action: loginPath(org),
          mode: 'authenticate',
          options: await this.ceremonies.authenticationOptions(org, step.userId, formCookie),
          fields: { form_token: formToken, step_token: stepToken, return_to: returnTo, step: 'passkey' },
          button: 'Use a passkey',
        })
      : undefined;
    return codeForm({
      frame,
      action: loginPath(org),
      formToken,
      stepToken,
      returnTo,
      userName: step.userName,
      error,
      code: code || !passkey,
      passkey: passkeyHtml,
    });
  }

  /** The first page's "Sign in with a passkey", where the organization allows a passkey alone (DECISIONS 14.5). */
  private async passwordlessForm(org: string, formCookie: string, returnTo: string | undefined): Promise<string | undefined> {
    const organization = await this.organizations.get(org);
    if (!organization.settings.passwordlessSignIn) return undefined;
    return passkeyForm({
      action: loginPath(org),
      mode: 'authenticate',
      options: await this.ceremonies.authenticationOptions(org, undefined, formCookie),
      fields: { form_token: this.forms.formToken(org, formCookie), return_to: returnTo?.slice(0, 4096), step: 'passkey' },
      button: 'Sign in with a passkey',
    });
  }

  /** The smart card's way in (DECISIONS 14.1): the client certificate of the TLS handshake, or of a trusted proxy's header. */
  @Post('authentication/customer/:org/login/certificate')
  @Audited('sign_in.success', 'sign_in.fail', 'sign_in.lockout', 'sign_in.logout')
  @HttpCode(200)
  async submitCertificate(
    @Param('org') org: string,
    @Headers() headers: Headers_,
    @Body() body: unknown,
    @SourceAddress() sourceAddress: string,
    @CorrelationId() correlationId: string,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const frame = await this.frame(org);
    if (!frame) return this.unknownOrganization(reply, org);
    const params = formParams(body);
    const checked = this.checkForm(org, headers, params, request, reply);
    if (!checked.ok) return this.html(reply, 403, passwordForm({ ...this.formView(org, frame, checked.formCookie, params.return_to), error: REFUSED_FORM }));
    const certificate = presentedCertificate(request, this.trustedProxies);
    const outcome = await this.login.withCertificate(org, certificate, { sourceAddress, correlationId, userAgent: single(headers['user-agent']) });
    return this.answer(reply, request, org, frame, checked.formCookie, params.return_to, outcome, undefined);
  }

  @Post('authentication/customer/:org/logout')
  @Audited('sign_in.logout')
  @HttpCode(200)
  async logout(
    @Param('org') org: string,
    @Headers() headers: Headers_,
    @Body() body: unknown,
    @SourceAddress() sourceAddress: string,
    @CorrelationId() correlationId: string,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const frame = await this.frame(org);
    if (!frame) return this.unknownOrganization(reply, org);
    const params = formParams(body);
    const checked = this.checkForm(org, headers, params, request, reply);
    const session = await this.sessionOf(request, org);
    if (!checked.ok) {
      return this.html(reply, 403, messagePage({ ...frame, title: 'Not signed out', heading: 'Not signed out' }, REFUSED_ACTION, signInLink(org)));
    }
    if (session) await this.sessions.end(session.id, { name: session.userName, sourceAddress, correlationId }, 'logout', org);
    reply.header('Set-Cookie', EXPIRED_SESSION_COOKIE);
    this.html(
      reply,
      200,
      messagePage({ ...frame, title: 'Signed out', heading: 'You are signed out' }, 'Your session has ended on this browser.', signInLink(org)),
    );
  }

  @Post('authentication/customer/:org/sessions/:session/end')
  @PathFormats({ session: 'uuid' })
  @Audited('sign_in.logout')
  @HttpCode(200)
  async endOwnSession(
    @Param('org') org: string,
    @Param('session') sessionId: string,
    @Headers() headers: Headers_,
    @Body() body: unknown,
    @SourceAddress() sourceAddress: string,
    @CorrelationId() correlationId: string,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const frame = await this.frame(org);
    if (!frame) return this.unknownOrganization(reply, org);
    const checked = this.checkForm(org, headers, formParams(body), request, reply);
    const session = await this.sessionOf(request, org);
    if (!session)
      return this.html(
        reply,
        401,
        messagePage({ ...frame, title: 'Not signed in', heading: 'You are not signed in' }, 'Sign in to see your sessions.', signInLink(org)),
      );
    if (!checked.ok) return this.signedIn(reply, org, frame, session, checked.formCookie, REFUSED_ACTION, 403);
    // Only the person's own sessions: another's id is as unknown as one that never existed.
    const ended = await this.sessions.endOne(sessionId, { name: session.userName, sourceAddress, correlationId }, 'logout', org, undefined, session.userId);
    return this.signedIn(reply, org, frame, session, checked.formCookie, ended ? 'The session has ended.' : 'That session had already ended.');
  }

  private async answer(
    reply: FastifyReply,
    request: FastifyRequest,
    org: string,
    frame: PageFrame,
    formCookie: string,
    returnTo: string | undefined,
    outcome: Exclude<LoginOutcome, { kind: 'code' } | { kind: 'enrol' }>,
    userName: string | undefined,
  ): Promise<void> {
    const view = { ...this.formView(org, frame, formCookie, returnTo), userName, passkey: await this.passwordlessForm(org, formCookie, returnTo) };
    switch (outcome.kind) {
      // A failed sign-in is the form again with its error, 200 as a page (a browser reports an error
      // status of a page it shows as a console error); the lockout still says Retry-After.
      case 'failed':
      case 'refused':
        return this.html(reply, 200, passwordForm({ ...view, error: outcome.message }));
      case 'locked':
        reply.header('Retry-After', outcome.retryAfter);
        return this.html(reply, 200, passwordForm({ ...view, error: outcome.message }));
      case 'signed-in': {
        // The browser's earlier session (prompt=login, or another person at the same browser) is
        // replaced: it ends, so that one browser holds one session.
        const previous = await this.sessions.fromRequest(request);
        if (previous && previous.id !== outcome.session.id) {
          await this.sessions.end(
            previous.id,
            { name: previous.userName, sourceAddress: request.ip, correlationId: String(request.id) },
            'logout',
            previous.org,
          );
        }
        reply.header('Set-Cookie', sessionCookie(outcome.cookieValue));
        const target = safeReturnTo(org, returnTo);
        if (target) return void reply.code(303).header('Location', target).header('Cache-Control', 'no-store').send();
        return this.signedIn(reply, org, frame, outcome.session, formCookie);
      }
    }
  }

  private async signedIn(
    reply: FastifyReply,
    org: string,
    frame: PageFrame,
    session: SignInSession,
    formCookie: string,
    notice?: string,
    status = 200,
  ): Promise<void> {
    const sessions = await this.sessions.listOfUser(org, session.userId);
    this.html(
      reply,
      status,
      signedInPage({
        frame,
        userName: session.userName,
        logoutAction: `/authentication/customer/${encodeURIComponent(org)}/logout`,
        formToken: this.forms.formToken(org, formCookie),
        current: session.id,
        notice,
        sessions: sessions.map((s) => ({
          id: s.id,
          description: `Signed in ${s.authTime.toISOString().replace('T', ' ').slice(0, 16)} UTC from ${s.sourceAddress ?? 'an unknown address'} (${s.amr.join(', ')})`,
          endAction: `/authentication/customer/${encodeURIComponent(org)}/sessions/${s.id}/end`,
        })),
      }),
    );
  }

  /** Login CSRF (DECISIONS 14.3): Fetch metadata and Origin, then the form token against the pre-session cookie. */
  private checkForm(
    org: string,
    headers: Headers_,
    params: Record<string, string>,
    request: FastifyRequest,
    reply: FastifyReply,
  ): { ok: true; formCookie: string } | { ok: false; formCookie: string } {
    const existing = this.forms.formCookie(request.headers.cookie);
    const crossSite = this.forms.crossSiteRefusal(headers);
    if (!crossSite && existing && this.forms.formTokenMatches(org, existing, params.form_token)) return { ok: true, formCookie: existing };
    return { ok: false, formCookie: existing ?? this.formCookieFor(request, reply) };
  }

  /** The browser's pre-session cookie, set now when it has none. */
  private formCookieFor(request: FastifyRequest, reply: FastifyReply): string {
    return this.forms.formCookieFor(request, reply);
  }

  private async sessionOf(request: FastifyRequest, org: string): Promise<SignInSession | null> {
    const session = await this.sessions.fromRequest(request);
    // A session of another organization does not sign anyone in here.
    return session && session.org === org ? session : null;
  }

  private formView(org: string, frame: PageFrame, formCookie: string, returnTo: string | undefined) {
    return {
      frame,
      action: loginPath(org),
      certificateAction: `${loginPath(org)}/certificate`,
      formToken: this.forms.formToken(org, formCookie),
      returnTo: returnTo?.slice(0, 4096),
    };
  }

  /** The page's frame; undefined for an unknown organization (any other failure, an outage, goes on to the error answer). */
  private async frame(org: string): Promise<PageFrame | undefined> {
    try {
      return { title: 'Sign in', organizationName: (await this.organizations.get(org)).name };
    } catch (error) {
      if (error instanceof DomainError && error.code === 'NOT_FOUND') return undefined;
      throw error;
    }
  }

  private unknownOrganization(reply: FastifyReply, org: string): void {
    sendUnknownOrganization(reply, org);
  }

  private html(reply: FastifyReply, status: number, body: string): void {
    sendPage(reply, status, body);
  }
}

function loginPath(org: string): string {
  return `/authentication/customer/${encodeURIComponent(org)}/login`;
}

function signInLink(org: string) {
  return { href: loginPath(org), text: 'Sign in' };
}

/** The session cookie (DECISIONS 14.2): __Host- (Secure, Path=/, no Domain), HttpOnly, SameSite=Strict; ends with the browser. */
function sessionCookie(value: string): string {
  return `${SESSION_COOKIE}=${value}; Path=/; Secure; HttpOnly; SameSite=Strict`;
}

function single(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** The form's fields as strings; a field given twice counts as absent (a browser never sends one twice). */
function formParams(body: unknown): Record<string, string> {
  const params: Record<string, string> = {};
  if (!body || typeof body !== 'object') return params;
  for (const [name, value] of Object.entries(body as Record<string, unknown>)) if (typeof value === 'string') params[name] = value;
  return params;
}
