import { PageFrame, errorBlock, escapeHtml, hidden, invalid, page } from '../login-page';

/**
 * The enrolment pages (DECISIONS 14.4), in the hosted login's frame and rules (14.3): server-rendered,
 * no script, a label for every field, the rules said at the field, errors announced and tied to it.
 */

export interface EnrolPasswordView {
  frame: PageFrame;
  action: string;
  formToken: string;
  link: string;
  userName: string;
  minLength: number;
  error?: string;
}

/** Step one: the person chooses their password. */
export function enrolPasswordForm(view: EnrolPasswordView): string {
  const { frame, action, formToken, link, userName, minLength, error } = view;
  const describedBy = error ? 'password-rules login-error' : 'password-rules';
  return page(
    { ...frame, title: 'Choose a password' },
    `<h1>Welcome, ${escapeHtml(userName)}</h1>
<p>Set up your sign-in to ${escapeHtml(frame.organizationName)}: choose a password, then add your authenticator app.</p>
${errorBlock(error)}
<form method="post" action="${escapeHtml(action)}">
${hidden('form_token', formToken)}${hidden('link', link)}<input type="hidden" name="step" value="password">
<input type="text" name="userName" autocomplete="username" value="${escapeHtml(userName)}" hidden readonly>
<label for="password">New password</label>
<input type="password" id="password" name="password" autocomplete="new-password" required minlength="${minLength}" maxlength="1024" aria-describedby="${describedBy}"${error ? ' aria-invalid="true"' : ''} autofocus>
<p id="password-rules" class="hint">At least ${minLength} characters; a passphrase of several words is easiest to remember.</p>
<label for="confirmation">Type it again</label>
<input type="password" id="confirmation" name="confirmation" autocomplete="new-password" required minlength="${minLength}" maxlength="1024"${invalid(error)}>
<button type="submit">Continue</button>
</form>`,
  );
}

export interface EnrolTotpView {
  frame: PageFrame;
  action: string;
  formToken: string;
  link: string;
  state: string;
  userName: string;
  /** The QR code of `uri`, an SVG element (inline: the page's CSP allows no image but this service's). */
  qrSvg: string;
  uri: string;
  secret: string;
  digits: number;
  error?: string;
  /** A signed-in person adding a factor (DECISIONS 14.5): no sign-in at the end, and a way back. */
  addFactor?: { cancelHref: string };
}

/** Step two: the authenticator app reads the QR code (or the secret, typed), and the person confirms one code. */
export function enrolTotpForm(view: EnrolTotpView): string {
  const { frame, action, formToken, link, state, userName, qrSvg, uri, secret, digits, error, addFactor } = view;
  return page(
    { ...frame, title: 'Add your authenticator' },
    `<h1>Add your authenticator app</h1>
<p>${addFactor ? 'Adding a second factor for' : 'Signing in as'} <strong>${escapeHtml(userName)}</strong>. Scan this code with your authenticator app (any app for one-time codes).</p>
${qrSvg}
<p id="totp-uri-text" class="hint">The QR code holds this address: <code>${escapeHtml(uri)}</code></p>
<p>Cannot scan it? Type this key into the app instead: <code class="secret">${escapeHtml(secret)}</code></p>
${errorBlock(error)}
<form method="post" action="${escapeHtml(action)}">
${hidden('form_token', formToken)}${hidden('link', link)}${hidden('state', state)}<input type="hidden" name="step" value="totp">
<label for="code">The ${digits}-digit code the app shows now</label>
<input type="text" id="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{${digits}}" required maxlength="${digits}" autofocus${invalid(error)}>
<button type="submit">${addFactor ? 'Confirm and add' : 'Confirm and sign in'}</button>
</form>${addFactor ? `\n<p><a href="${escapeHtml(addFactor.cancelHref)}">Cancel and go back to Security</a></p>` : ''}`,
  );
}
