import type { FastifyReply } from 'fastify';

/**
 * The few HTML pages of the authorization and logout endpoints (DECISIONS 15.2, 15.6): an error
 * that must not go back to an unverified redirect URI, the same-site bounce, and the sign-out
 * confirmation. Server-rendered, no script, nothing framed, nothing cached.
 */

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/**
 * Headers every answer of the authorization and logout endpoints carries, and every error the
 * exception filter answers on a page route (DECISIONS 14.3, 15.2): never cached, nothing loaded,
 * never framed, no Referer.
 */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'Cache-Control': 'no-store',
  Pragma: 'no-cache',
  'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'; base-uri 'none'",
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
};

export function protectiveHeaders(reply: FastifyReply): FastifyReply {
  return reply.headers(PAGE_HEADERS);
}

function page(title: string, body: string, head = ''): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">${head}<title>${escapeHtml(title)}</title></head>
<body><main>${body}</main></body>
</html>
`;
}

/** An error page's HTML: its title and the sentence that says what happened and what to do. */
export function errorPageHtml(title: string, message: string): string {
  return page(title, `<h1>${escapeHtml(title)}</h1><p role="alert">${escapeHtml(message)}</p>`);
}

/** An error shown to the person, never sent to the client (unknown client or redirect URI: RFC 6749 4.1.2.1). */
export function errorPage(reply: FastifyReply, status: number, title: string, message: string): FastifyReply {
  return protectiveHeaders(reply).status(status).type('text/html; charset=utf-8').send(errorPageHtml(title, message));
}

/**
 * The session cookie is SameSite=Strict, so a navigation another site starts does not carry it. This
 * page asks the browser again from this site (a meta refresh, no script), which does.
 */
export function sameSiteBounce(reply: FastifyReply, location: string): FastifyReply {
  return protectiveHeaders(reply)
    .status(200)
    .type('text/html; charset=utf-8')
    .send(
      page(
        'Signing in',
        `<p>Continuing to sign in… <a href="${escapeHtml(location)}">Continue</a></p>`,
        `<meta http-equiv="refresh" content="0;url=${escapeHtml(location)}">`,
      ),
    );
}

/**
 * RP-initiated logout: the person confirms (OIDC RP-Initiated Logout 1.0, 2). `refused`: a
 * confirmation that failed the CSRF rule came first (403, and why; DECISIONS 15.6).
 */
export function logoutConfirmation(reply: FastifyReply, action: string, fields: Record<string, string>, refused?: string): FastifyReply {
  const hidden = Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
    .join('');
  return (
    protectiveHeaders(reply)
      // Not no-referrer here: under it browsers post the form with `Origin: null`, which the CSRF rule refuses (DECISIONS 14.3).
      .header('Referrer-Policy', 'same-origin')
      .status(refused ? 403 : 200)
      .type('text/html; charset=utf-8')
      .send(
        page(
          'Sign out',
          `<h1>Sign out?</h1>${refused ? `<p role="alert">${escapeHtml(refused)}</p>` : ''}<p>Do you want to sign out of this organization's sign-in?</p><form method="post" action="${escapeHtml(action)}">${hidden}<input type="hidden" name="confirm" value="yes"><button type="submit">Sign out</button></form>`,
        ),
      )
  );
}

/** After a logout with no registered place to return to. */
export function signedOutPage(reply: FastifyReply): FastifyReply {
  return protectiveHeaders(reply)
    .status(200)
    .type('text/html; charset=utf-8')
    .send(page('Signed out', '<h1>You are signed out</h1><p>You may close this window.</p>'));
}
