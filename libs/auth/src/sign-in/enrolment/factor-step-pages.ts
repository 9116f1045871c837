import { Injectable } from '@nestjs/common';
import QRCode from 'qrcode';
import { LoginFormProtection } from '../login-form-protection';
import { PageFrame, escapeHtml, passkeyForm } from '../login-page';
import { PasskeyCeremonies } from '../passkeys/passkey-ceremonies';
import { enrolTotpForm } from './enrolment-page';
import type { EnrolmentOutcome } from './enrolment.service';

/**
 * The factor step's page (DECISIONS 14.4, 14.5, 14.6): an authenticator app's QR code and code field,
 * and a passkey's registration form with a new challenge for this person and this browser's flow.
 * Shared by the enrolment link's pages, the login page (an administrator's mark) and the portal
 * Security page's add-factor ticket (which may add either, and goes back to Security).
 */
@Injectable()
export class FactorStepPages {
  constructor(
    private readonly forms: LoginFormProtection,
    private readonly ceremonies: PasskeyCeremonies,
  ) {}

  async render(
    org: string,
    frame: PageFrame,
    formCookie: string,
    link: string,
    outcome: Extract<EnrolmentOutcome, { kind: 'totp' }>,
    notice?: string,
    continueHref?: string,
  ): Promise<string> {
    const formToken = this.forms.formToken(org, formCookie);
    // A new registration challenge for this page, bound to this person and this browser's flow.
    const options = await this.ceremonies.registrationOptions(org, frame.organizationName, { id: outcome.userId, userName: outcome.userName }, formCookie);
    return enrolTotpForm({
      frame,
      action: enrolPath(org),
      formToken,
      link,
      state: outcome.state,
      userName: outcome.userName,
      qrSvg: await qrCode(outcome.totp.uri),
      uri: outcome.totp.uri,
      secret: outcome.totp.secret,
      digits: outcome.totp.digits,
      error: outcome.error,
      notice,
      continueHref,
      confirm: outcome.purpose === 'ticket' ? 'Confirm and add' : outcome.purpose === 'session' ? 'Add this authenticator' : 'Confirm and sign in',
      cancelHref: outcome.purpose === 'ticket' ? securityPage(org) : undefined,
      passkey: passkeyForm({
        action: enrolPath(org),
        mode: 'register',
        options,
        fields: { form_token: formToken, link: link || undefined, state: outcome.state, step: 'passkey' },
        button: 'Create a passkey',
        name: outcome.passkeyName,
        error: outcome.passkeyError,
      }),
    });
  }
}

/** The portal's Security page of the organization, where adding a factor with a ticket starts and ends (DECISIONS 14.6). */
export function securityPage(org: string): string {
  return `/portal/${encodeURIComponent(org)}/security`;
}

export function enrolPath(org: string): string {
  return `/authentication/customer/${encodeURIComponent(org)}/enrol`;
}

/**
 * The QR code of the otpauth URI as an inline SVG element (the page's CSP allows no data: image), with
 * its text alternative: the URI itself, for screen readers and for those who cannot scan.
 */
async function qrCode(uri: string): Promise<string> {
  const svg = await QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
  const label = `QR code of ${uri}`;
  return svg
    .replace(/^<svg /, `<svg class="qr" width="224" height="224" role="img" aria-label="${escapeHtml(label)}" `)
    .replace(/>/, `><title>${escapeHtml(label)}</title>`);
}
