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
  /** The passkey's registration form (passkeyForm), the other choice of this step (DECISIONS 14.5). */
  passkey: string;
  /** A factor added from a session (or just now): said at the top, with where to go on. */
  notice?: string;
  continueHref?: string;
  /** The code form's button: "Confirm and sign in", or "Add this authenticator" from a session. */
  confirm?: string;
  /** Adding a factor from the portal's Security page (DECISIONS 14.6): no sign-in at the end, and a way back. */
  cancelHref?: string;
}

/**
 * Step two, the factor step: an authenticator app (the QR code, or the secret typed; one code
 * confirms it) or a passkey (named; the browser registers it). A person chooses one; from a session
 * (the portal's "add a factor") they may add several.
 */
export function enrolTotpForm(view: EnrolTotpView): string {
  const { frame, action, formToken, link, state, userName, qrSvg, uri, secret, digits, error, passkey, notice, continueHref, cancelHref } = view;
  return page(
    { ...frame, title: 'Add a second factor' },
    `<h1>Add a second factor</h1>
${notice ? `<p class="notice" role="status">${escapeHtml(notice)}</p>` : ''}${continueHref ? `<p><a href="${escapeHtml(continueHref)}">Continue</a></p>` : ''}
<p>${cancelHref ? 'Adding a second factor for' : 'Signing in as'} <strong>${escapeHtml(userName)}</strong>. Choose one: an authenticator app that shows one-time codes, or a passkey held by this device or a security key.</p>
<h2>Authenticator app</h2>
<p>Scan this code with your authenticator app (any app for one-time codes).</p>
${qrSvg}
<p id="totp-uri-text" class="hint">The QR code holds this address: <code>${escapeHtml(uri)}</code></p>
<p>Cannot scan it? Type this key into the app instead: <code class="secret">${escapeHtml(secret)}</code></p>
${errorBlock(error)}
<form method="post" action="${escapeHtml(action)}">
${hidden('form_token', formToken)}${link ? hidden('link', link) : ''}${hidden('state', state)}<input type="hidden" name="step" value="totp">
<label for="code">The ${digits}-digit code the app shows now</label>
<input type="text" id="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{${digits}}" required maxlength="${digits}"${notice ? '' : ' autofocus'}${invalid(error)}>
<button type="submit">${escapeHtml(view.confirm ?? 'Confirm and sign in')}</button>
</form>
<div class="alternative">
<h2>Passkey</h2>
<p>Or add a passkey: your device or security key keeps it, and asks for your PIN, fingerprint or face.</p>
${passkey}
</div>${cancelHref ? `\n<p><a href="${escapeHtml(cancelHref)}">Cancel and go back to Security</a></p>` : ''}`,
  );
}
