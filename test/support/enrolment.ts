import { cookiePair, hiddenField, nextTotpCode } from './sign-in';
import { TestApp } from './test-app';

/** The otpauth URI the enrolment page's QR code names in its text alternative, and its secret. */
export function offeredTotp(html: string): { uri: string; secret: string } {
  const match = /aria-label="QR code of ([^"]+)"/.exec(html);
  if (!match) throw new Error(`The page shows no QR code: ${html.slice(0, 300)}`);
  const uri = match[1].replace(/&amp;/g, '&');
  return { uri, secret: new URL(uri).searchParams.get('secret')! };
}

/**
 * A person follows their enrolment link as a browser does (DECISIONS 14.4): chooses `password`,
 * confirms the offered authenticator with a code at the app's clock, and is signed in. Answers the
 * session cookie and the authenticator's secret.
 */
export async function enrolThroughLink(t: TestApp, url: string, password: string): Promise<{ cookie: string; secret: string }> {
  const path = new URL(url).pathname;
  const org = path.split('/')[3];
  const page = await t.bare.get(path);
  const formCookie = cookiePair(page.headers['set-cookie'], '__Host-Http-login-form');
  if (page.status !== 200 || !formCookie) throw new Error(`GET ${path}: ${page.status}`);
  const post = (fields: Record<string, string>) =>
    t.bare
      .post(`/authentication/customer/${org}/enrol`)
      .set({ Cookie: formCookie, Origin: new URL(t.config.authBaseUrl).origin })
      .type('form')
      .send({ form_token: hiddenField(page.text, 'form_token')!, link: path.split('/').pop()!, ...fields });
  const totpPage = await post({ step: 'password', password, confirmation: password });
  const { secret } = offeredTotp(totpPage.text);
  const done = await post({ step: 'totp', state: hiddenField(totpPage.text, 'state')!, code: nextTotpCode(t, secret) });
  const cookie = cookiePair(done.headers['set-cookie'], '__Host-Http-session');
  if (done.status !== 303 || !cookie) throw new Error(`Enrolment through ${path} failed: ${done.status} ${done.text.slice(0, 300)}`);
  return { cookie, secret };
}
