import type { FastifyReply } from 'fastify';

/**
 * The hosted login page's HTML (DECISIONS 14.3): server-rendered, no script, one small stylesheet
 * from this service (the CSP allows nothing else). Every field has a label; an error is announced
 * (role="alert") and tied to its fields with aria-describedby; the fields come in the order a person
 * fills them in, followed by their button.
 */

/**
 * The login page's CSP (DECISIONS 14.3): nothing but this service's stylesheet, no script at all, no
 * framing. No form-action: a sign-in's 303 to the authorization endpoint goes on to the relying
 * party's redirect URI, and browsers check form-action against every redirect of a form's submission.
 */
export const LOGIN_CSP = ["default-src 'none'", "style-src 'self'", "img-src 'self'", "base-uri 'none'", "frame-ancestors 'none'"].join('; ');

/**
 * The CSP of a page with a passkey form (DECISIONS 14.5): the same, and this service's two scripts
 * (`script-src 'self'`: @simplewebauthn/browser and the passkey form's script, as files; nothing inline).
 */
export const PASSKEY_PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Where the passkey forms' scripts are served (libs/auth PasskeyScriptsController). */
export const WEBAUTHN_BROWSER_PATH = '/authentication/webauthn/simplewebauthn-browser.js';
export const PASSKEY_SCRIPT_PATH = '/authentication/webauthn/passkey.js';
const PASSKEY_SCRIPTS = `<script src="${WEBAUTHN_BROWSER_PATH}" defer></script>\n<script src="${PASSKEY_SCRIPT_PATH}" defer></script>\n`;

/**
 * Sends a page of the hosted login (the sign-in and the enrolment pages) with the pages' headers of
 * DECISIONS 14.3, written in this one place; a page that holds a passkey form (and only such a page)
 * may run this service's scripts.
 */
export function sendPage(reply: FastifyReply, status: number, body: string): void {
  void reply
    .code(status)
    .header('Content-Type', 'text/html; charset=utf-8')
    .header('Cache-Control', 'no-store')
    .header('Pragma', 'no-cache')
    .header('Content-Security-Policy', body.includes(PASSKEY_SCRIPTS) ? PASSKEY_PAGE_CSP : LOGIN_CSP)
    .header('X-Frame-Options', 'DENY')
    .header('Referrer-Policy', 'same-origin')
    .send(body);
}

/** Escapes text for HTML element content and double-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

export const LOGIN_STYLESHEET_PATH = '/authentication/login.css';

/** The stylesheet (served as a file so that the CSP needs no inline style). Contrast is at least 7:1 for text. */
export const LOGIN_STYLESHEET = `
:root { color-scheme: light; font-family: system-ui, sans-serif; color: #1a1a1a; background: #f4f5f7; }
body { margin: 0; }
main { max-width: 26rem; margin: 3rem auto; padding: 2rem; background: #fff; border: 1px solid #c9ccd1; border-radius: 8px; }
h1 { font-size: 1.5rem; margin: 0 0 1rem; }
h2 { font-size: 1.125rem; margin: 1.5rem 0 0.5rem; }
p { line-height: 1.5; }
label { display: block; font-weight: 600; margin: 1rem 0 0.25rem; }
input[type=text], input[type=password] { box-sizing: border-box; width: 100%; padding: 0.5rem; font-size: 1rem; border: 1px solid #5f6368; border-radius: 4px; }
input[aria-invalid=true] { border-color: #a00000; }
button { margin-top: 1.25rem; padding: 0.6rem 1.2rem; font-size: 1rem; border: 0; border-radius: 4px; background: #0b4f9c; color: #fff; cursor: pointer; }
button.secondary { background: #fff; color: #0b4f9c; border: 1px solid #0b4f9c; }
button:focus-visible, input:focus-visible { outline: 3px solid #e8a200; outline-offset: 2px; }
.error { color: #a00000; font-weight: 600; border-left: 4px solid #a00000; padding-left: 0.75rem; }
.notice { border-left: 4px solid #0b4f9c; padding-left: 0.75rem; }
.alternative { margin-top: 2rem; border-top: 1px solid #c9ccd1; padding-top: 1rem; }
ul.sessions { list-style: none; padding: 0; }
ul.sessions li { border-top: 1px solid #c9ccd1; padding: 0.5rem 0; }
.hint { margin: 0.25rem 0 0; color: #3c4043; }
.qr { display: block; margin: 1rem 0; }
code.secret { font-size: 1.05rem; word-break: break-all; }
`;

export interface PageFrame {
  title: string;
  organizationName: string;
}

/** The page around every form of the hosted login (the enrolment pages share it). */
export function page({ title, organizationName }: PageFrame, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${escapeHtml(title)} - ${escapeHtml(organizationName)}</title>
<link rel="stylesheet" href="${LOGIN_STYLESHEET_PATH}">
${body.includes(' data-passkey="') ? PASSKEY_SCRIPTS : ''}</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}

export function hidden(name: string, value: string | undefined): string {
  return value === undefined ? '' : `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`;
}

export function errorBlock(error: string | undefined): string {
  return error ? `<p id="login-error" class="error" role="alert">${escapeHtml(error)}</p>` : '';
}

export function invalid(error: string | undefined): string {
  return error ? ' aria-invalid="true" aria-describedby="login-error"' : '';
}

export interface PasswordFormView {
  /** Where the organization allows a passkey alone (DECISIONS 14.5): its form. */
  passkey?: string;
  frame: PageFrame;
  action: string;
  formToken: string;
  returnTo?: string;
  userName?: string;
  error?: string;
  notice?: string;
  /** Where the smart-card button posts; absent when no certificate can reach this service. */
  certificateAction?: string;
}

/** Step one: userName and password; a smart card as the other way in. */
export function passwordForm(view: PasswordFormView): string {
  const { frame, action, formToken, returnTo, userName, error, notice, certificateAction, passkey } = view;
  return page(
    { ...frame, title: 'Sign in' },
    `<h1>Sign in to ${escapeHtml(frame.organizationName)}</h1>
${errorBlock(error)}${notice ? `<p class="notice" role="status">${escapeHtml(notice)}</p>` : ''}
<form method="post" action="${escapeHtml(action)}">
${hidden('form_token', formToken)}${hidden('return_to', returnTo)}<input type="hidden" name="step" value="password">
<label for="userName">User name</label>
<input type="text" id="userName" name="userName" autocomplete="username" autocapitalize="none" spellcheck="false" required maxlength="128" value="${escapeHtml(userName ?? '')}"${invalid(error)}${userName ? '' : ' autofocus'}>
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required maxlength="1024"${invalid(error)}${userName ? ' autofocus' : ''}>
<button type="submit">Sign in</button>
</form>
${
  passkey
    ? `<div class="alternative">
<h2>Passkey</h2>
<p>Sign in with a passkey alone: your device asks for your PIN, fingerprint or face.</p>
${passkey}
</div>
`
    : ''
}${
      certificateAction
        ? `<div class="alternative">
<h2>Smart card</h2>
<p>With your smart card in its reader, your browser presents its certificate.</p>
<form method="post" action="${escapeHtml(certificateAction)}">
${hidden('form_token', formToken)}${hidden('return_to', returnTo)}
<button type="submit" class="secondary">Sign in with a smart card</button>
</form>
</div>`
        : ''
    }`,
  );
}

export interface CodeFormView {
  frame: PageFrame;
  action: string;
  formToken: string;
  stepToken: string;
  returnTo?: string;
  userName: string;
  error?: string;
  /** Whether the person holds a one-time code credential (false: a passkey is their only second factor). */
  code?: boolean;
  /** The person's passkeys' form (DECISIONS 14.5), when they hold one. */
  passkey?: string;
}

/** Step two: the one-time code of the person's authenticator, or one of their passkeys. */
export function codeForm(view: CodeFormView): string {
  const { frame, action, formToken, stepToken, returnTo, userName, error, passkey } = view;
  const code = view.code ?? true;
  if (!code && passkey) {
    return page(
      { ...frame, title: 'Passkey' },
      `<h1>Use your passkey</h1>
<p>Signing in as <strong>${escapeHtml(userName)}</strong>. Your device asks for the passkey you added for ${escapeHtml(frame.organizationName)}.</p>
${errorBlock(error)}
${passkey}`,
    );
  }
  return page(
    { ...frame, title: 'One-time code' },
    `<h1>Enter your one-time code</h1>
<p>Signing in as <strong>${escapeHtml(userName)}</strong>. Open the authenticator that holds your ${escapeHtml(frame.organizationName)} code.</p>
${errorBlock(error)}
<form method="post" action="${escapeHtml(action)}">
${hidden('form_token', formToken)}${hidden('step_token', stepToken)}${hidden('return_to', returnTo)}<input type="hidden" name="step" value="code">
<label for="code">One-time code</label>
<input type="text" id="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6,8}" required maxlength="8" autofocus${invalid(error)}>
<button type="submit">Verify</button>
</form>
${
  passkey
    ? `<div class="alternative">
<h2>Passkey</h2>
<p>Or use one of your passkeys instead of a code.</p>
${passkey}
</div>`
    : ''
}`,
  );
}

export interface SignedInView {
  frame: PageFrame;
  userName: string;
  logoutAction: string;
  formToken: string;
  current: string;
  sessions: { id: string; description: string; endAction: string }[];
  notice?: string;
}

/** Where a person lands without a return_to: who they are, their sessions, sign-out. */
export function signedInPage(view: SignedInView): string {
  const { frame, userName, logoutAction, formToken, current, sessions, notice } = view;
  const items = sessions
    .map(
      (s) =>
        `<li>${escapeHtml(s.description)}${
          s.id === current
            ? ' (this browser)'
            : `<form method="post" action="${escapeHtml(s.endAction)}">${hidden('form_token', formToken)}<button type="submit" class="secondary" aria-label="End session ${escapeHtml(s.description)}">End session</button></form>`
        }</li>`,
    )
    .join('\n');
  return page(
    { ...frame, title: 'Signed in' },
    `<h1>You are signed in</h1>
${notice ? `<p class="notice" role="status">${escapeHtml(notice)}</p>` : ''}
<p>Signed in to ${escapeHtml(frame.organizationName)} as <strong>${escapeHtml(userName)}</strong>.</p>
<form method="post" action="${escapeHtml(logoutAction)}">
${hidden('form_token', formToken)}
<button type="submit">Sign out</button>
</form>
<h2>Your sessions</h2>
<ul class="sessions">
${items}
</ul>`,
  );
}

/** A page that only says something (signed out, an error that has no form to return to). */
export function messagePage(frame: PageFrame & { heading: string }, message: string, link?: { href: string; text: string }): string {
  return page(
    frame,
    `<h1>${escapeHtml(frame.heading)}</h1>
<p>${escapeHtml(message)}</p>
${link ? `<p><a href="${escapeHtml(link.href)}">${escapeHtml(link.text)}</a></p>` : ''}`,
  );
}

/** The 404 page of a path whose organization does not exist, for every page of the hosted login. */
export function sendUnknownOrganization(reply: FastifyReply, org: string): void {
  sendPage(
    reply,
    404,
    messagePage({ title: 'Unknown organization', organizationName: 'Sign in', heading: 'Unknown organization' }, `There is no organization "${org}".`),
  );
}

export interface PasskeyFormView {
  action: string;
  /** `register`: a new passkey, with its name; `authenticate`: sign in with one. */
  mode: 'register' | 'authenticate';
  /** The ceremony's options (PublicKeyCredentialCreationOptionsJSON or ...RequestOptionsJSON). */
  options: unknown;
  /** The form's hidden fields (form token, step, state). */
  fields: Record<string, string | undefined>;
  button: string;
  /** For `register`: the name field's value. */
  name?: string;
  error?: string;
}

/**
 * A passkey form (DECISIONS 14.5): the page's script (PASSKEY_SCRIPT) asks the browser for the
 * passkey with `data-options` and posts its answer in `response`. What went wrong in the browser is
 * said in its status line; what the server refused comes back as `error`.
 */
export function passkeyForm(view: PasskeyFormView): string {
  const { action, mode, options, fields, button, name, error } = view;
  const id = mode === 'register' ? 'passkey-register' : 'passkey-sign-in';
  const hiddenFields = Object.entries(fields)
    .map(([field, value]) => hidden(field, value))
    .join('');
  const nameField =
    mode === 'register'
      ? `<label for="passkey-name">Name of this passkey</label>
<input type="text" id="passkey-name" name="passkey_name" required maxlength="64" value="${escapeHtml(name ?? 'My passkey')}" aria-describedby="passkey-name-hint">
<p id="passkey-name-hint" class="hint">So that you can tell your passkeys apart later, for example "Work laptop" or "Phone".</p>
`
      : '';
  return `<form method="post" action="${escapeHtml(action)}" id="${id}" data-passkey="${mode}" data-options="${escapeHtml(JSON.stringify(options))}">
${hiddenFields}<input type="hidden" name="response" value="">
${nameField}${error ? `<p id="${id}-error" class="error" role="alert">${escapeHtml(error)}</p>\n` : ''}<p class="error" role="alert" data-passkey-status hidden></p>
<button type="submit"${mode === 'authenticate' ? ' class="secondary"' : ''}>${escapeHtml(button)}</button>
</form>`;
}
