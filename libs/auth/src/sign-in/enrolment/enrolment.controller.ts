import { Body, Controller, Get, Headers, HttpCode, Param, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { OrganizationService } from '@app/accounts';
import { Audited } from '@app/audit';
import { CorrelationId, DomainError, PathFormats, Public, SourceAddress } from '@app/common';
import { SignInSessionService } from '../../sessions/sign-in-session.service';
import { SESSION_COOKIE } from '../../sessions/sign-in-sessions';
import { FORM_COOKIE, LoginFormProtection } from '../login-form-protection';
import { PageFrame, messagePage, sendPage, sendUnknownOrganization } from '../login-page';
import { safeReturnTo } from '../return-to';
import { enrolPasswordForm } from './enrolment-page';
import { FactorStepPages, enrolPath, securityPage } from './factor-step-pages';
import { EnrolmentOutcome, EnrolmentService } from './enrolment.service';

/** The password rule said at the field (DECISIONS 3.5; PasswordHasher enforces it). */
const MIN_PASSWORD_LENGTH = 12;
const REFUSED_FORM = 'This form did not come from this page, so nothing was changed. Open your enrolment link again: it still works.';

type Headers_ = Record<string, string | string[] | undefined>;

/**
 * The enrolment link's pages (DECISIONS 14.4): `GET /authentication/customer/{org}/enrol/{link}` opens
 * the password step, `POST /authentication/customer/{org}/enrol` takes the password step and then the
 * authenticator's code, and the person lands in the portal signed in. Server-rendered like the login
 * page, under its rules (DECISIONS 14.3): no script, its CSP (the QR code is an inline SVG element, no
 * image), no-store, the login CSRF checks (Fetch metadata and Origin, the form token of the
 * pre-session cookie). Public to the bearer guard: the link is the credential. The same two routes
 * serve the portal Security page's add-factor ticket (DECISIONS 14.6): opened in its own live session
 * it goes straight to the factor step (an authenticator app or a passkey, 14.5) and ends back on
 * `/portal/{org}/security`; it is the only way to add a factor from a session.
 */
@ApiExcludeController()
@Public()
@Controller()
export class EnrolmentController {
  constructor(
    private readonly enrolment: EnrolmentService,
    private readonly forms: LoginFormProtection,
    private readonly organizations: OrganizationService,
    private readonly factorPages: FactorStepPages,
    private readonly sessions: SignInSessionService,
  ) {}

  @Get('authentication/customer/:org/enrol/:link')
  @PathFormats({ link: 'enrolmentLink' })
  async open(@Param('org') org: string, @Param('link') link: string, @Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const frame = await this.frame(org);
    if (!frame) return this.unknownOrganization(reply, org);
    const formCookie = this.formCookieFor(request, reply);
    // An add-factor ticket opens only in the browser session that asked for it (DECISIONS 14.6).
    const opened = await this.enrolment.open(org, link, await this.sessionOf(request, org), formCookie);
    return this.answer(reply, org, frame, formCookie, link, opened);
  }

  @Post('authentication/customer/:org/enrol')
  @Audited(
    'user.password.set',
    'device.create',
    'device.issue',
    'credential.issue',
    'user.enrolment.complete',
    'user.factor.add',
    'sign_in.success',
    'sign_in.fail',
    'sign_in.lockout',
  )
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
    const existing = this.forms.formCookie(request.headers.cookie);
    if (this.forms.crossSiteRefusal(headers) || !existing || !this.forms.formTokenMatches(org, existing, params.form_token)) {
      this.formCookieFor(request, reply);
      return this.refused(reply, frame, this.forms.hostMismatch(headers) ?? REFUSED_FORM, 403);
    }
    const origin = { sourceAddress, correlationId, userAgent: single(headers['user-agent']) };
    // A factor step without a link is the mark's (no session yet) or a session's own (the live session of this organization);
    // an add-factor ticket's is its session's only (DECISIONS 14.6).
    const session = await this.sessionOf(request, org);
    const outcome =
      params.step === 'totp'
        ? await this.enrolment.confirmTotp(org, params.link, params.state, params.code, existing, origin, session?.id)
        : params.step === 'passkey'
          ? await this.enrolment.confirmPasskey(org, params.link, params.state, params.response, params.passkey_name, existing, origin, session?.id)
          : await this.enrolment.choosePassword(org, params.link, params.password, params.confirmation, existing);
    return this.answer(reply, org, frame, existing, params.link ?? '', outcome);
  }

  private async answer(reply: FastifyReply, org: string, frame: PageFrame, formCookie: string, link: string, outcome: EnrolmentOutcome): Promise<void> {
    switch (outcome.kind) {
      case 'refused':
        return this.refused(reply, frame, outcome.message, 200);
      case 'password':
        return this.html(reply, 200, this.passwordPage(org, frame, formCookie, link, outcome.userName, outcome.error || undefined));
      case 'locked':
        reply.header('Retry-After', outcome.retryAfter);
        return this.html(reply, 200, await this.factorPages.render(org, frame, formCookie, link, { ...outcome, kind: 'totp', error: outcome.message }));
      case 'totp':
        return this.html(reply, 200, await this.factorPages.render(org, frame, formCookie, link, outcome));
      case 'signed-in': {
        reply.header('Set-Cookie', `${SESSION_COOKIE}=${outcome.cookieValue}; Path=/; Secure; HttpOnly; SameSite=Strict`);
        // Where a person lands once enrolled: where they were going, else their organization's portal, signed in (DECISIONS 14.4).
        const target = safeReturnTo(org, outcome.returnTo) ?? `/portal/${encodeURIComponent(org)}/`;
        if (outcome.factor === 'FIDO2') {
          // A passkey: the same step again, from the new session, to add another one or go on (DECISIONS 14.5).
          const step = await this.enrolment.startFactorStep(
            org,
            { userId: outcome.session.userId, userName: outcome.session.userName },
            'session',
            formCookie,
            {
              sessionId: outcome.session.id,
              returnTo: outcome.returnTo,
            },
          );
          return this.html(reply, 200, await this.factorPages.render(org, frame, formCookie, '', step, addedNotice(outcome), target));
        }
        return void reply.code(303).header('Location', target).header('Cache-Control', 'no-store').send();
      }
      case 'added': {
        const target = safeReturnTo(org, outcome.returnTo) ?? `/authentication/customer/${encodeURIComponent(org)}/login`;
        const step = await this.enrolment.startFactorStep(org, { userId: outcome.userId, userName: outcome.userName }, 'session', formCookie, {
          sessionId: outcome.sessionId,
          returnTo: outcome.returnTo,
        });
        return this.html(reply, 200, await this.factorPages.render(org, frame, formCookie, '', step, addedNotice(outcome), target));
      }
      case 'factor-added':
        // Back where adding started, signed in as before (DECISIONS 14.6).
        return void reply.code(303).header('Location', securityPage(org)).header('Cache-Control', 'no-store').send();
    }
  }

  private async sessionOf(request: FastifyRequest, org: string) {
    const session = await this.sessions.fromRequest(request);
    return session && session.org === org ? session : null;
  }

  private passwordPage(org: string, frame: PageFrame, formCookie: string, link: string, userName: string, error?: string): string {
    return enrolPasswordForm({
      frame,
      action: enrolPath(org),
      formToken: this.forms.formToken(org, formCookie),
      link,
      userName,
      minLength: MIN_PASSWORD_LENGTH,
      error,
    });
  }

  private refused(reply: FastifyReply, frame: PageFrame, message: string, status: number): void {
    this.html(reply, status, messagePage({ ...frame, title: 'Enrolment link', heading: 'This link cannot be used' }, message));
  }

  /** The browser's pre-session cookie (DECISIONS 14.3), set now when it has none. */
  private formCookieFor(request: FastifyRequest, reply: FastifyReply): string {
    const existing = this.forms.formCookie(request.headers.cookie);
    if (existing) return existing;
    const created = this.forms.newFormCookie();
    reply.header('Set-Cookie', `${FORM_COOKIE}=${created}; Path=/; Secure; HttpOnly; SameSite=Strict`);
    return created;
  }

  private async frame(org: string): Promise<PageFrame | undefined> {
    try {
      return { title: 'Set up your sign-in', organizationName: (await this.organizations.get(org)).name };
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

function addedNotice(outcome: { factor: 'OATH_TOTP' | 'FIDO2'; passkeyName?: string }): string {
  return outcome.factor === 'FIDO2'
    ? `Your passkey "${outcome.passkeyName ?? ''}" was added. Add another one, or continue.`
    : 'Your authenticator app was added. Add another factor, or continue.';
}

function single(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** The form's fields as strings. */
function formParams(body: unknown): Record<string, string> {
  const params: Record<string, string> = {};
  if (!body || typeof body !== 'object') return params;
  for (const [name, value] of Object.entries(body as Record<string, unknown>)) if (typeof value === 'string') params[name] = value;
  return params;
}
