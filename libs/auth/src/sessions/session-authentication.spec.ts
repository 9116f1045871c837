import { DomainError } from '@app/common';
import type { AuditLog } from '@app/audit';
import type { AppConfig } from '@app/config';
import { SignInFactorPolicy } from '../grants/sign-in-factor.policy';
import { parseScopeAssignment } from '../authorization/scope-assignment.loader';
import type { SubjectState, TokenRepository } from '../tokens/token.repository';
import { CookieRequest, SessionAuthentication } from './session-authentication';
import { SignInSession, SignInSessions } from './sign-in-sessions';

const COOKIE = `__Host-Http-session=${'a'.repeat(43)}`;
const OWN = 'https://auth.example.test';

const session: SignInSession = {
  id: 's1',
  org: 'acme',
  userId: 'u1',
  userName: 'ada',
  authTime: new Date(0),
  amr: ['pwd', 'otp'],
  idleExpiresAt: new Date(1e13),
  absoluteExpiresAt: new Date(1e13),
};
const state: SubjectState = {
  org_id: 'acme',
  subject_kind: 'user',
  subject_id: 'u1',
  subject_name: 'ada',
  user_type: 'cardholder',
  role: 'Cardholder',
  disabled: false,
  organization_administrator: true,
  platform_administrator: false,
  groups: [],
  application_id_policy: 'any',
};

/** The guard's rules with stand-ins for the session store, the user's state and the audit log. */
function setUp(live: { session?: SignInSession | null; state?: SubjectState } = {}) {
  const recorded: unknown[] = [];
  const sessions = { fromRequest: async () => (live.session === undefined ? session : live.session), end: async () => 0 } as SignInSessions;
  const tokens = { findUserState: async () => live.state ?? state } as unknown as TokenRepository;
  const roles = parseScopeAssignment(['roleWithScope.name.1=Cardholder', 'roleWithScope.scopes.1=Scope.device'].join('\n'), 'test.properties');
  const audit = { record: async (event: unknown) => void recorded.push(event) } as unknown as AuditLog;
  const config = {
    publicBaseUrl: 'https://api.example.test',
    authBaseUrl: `${OWN}/`,
    publicOrigins: ['https://api.example.test'],
    authOrigins: [OWN],
  } as AppConfig;
  return { auth: new SessionAuthentication(config, sessions, tokens, new SignInFactorPolicy(roles), audit), recorded };
}

function request(method: string, headers: Record<string, string | undefined>, url = '/admin/v1/organizations/acme/users'): CookieRequest {
  const all: Record<string, string | undefined> = { cookie: COOKIE, 'application-id': 'portal', ...headers };
  for (const key of Object.keys(all)) if (all[key] === undefined) delete all[key];
  return { method, url, routeOptions: { url: '/admin/v1/organizations/:org/users' }, headers: all, ip: '192.0.2.1', id: 'r1' };
}

async function outcome(auth: SessionAuthentication, req: CookieRequest): Promise<string> {
  try {
    await auth.authenticate(req);
    return 'accepted';
  } catch (error) {
    return `${(error as DomainError).code}: ${(error as DomainError).detail}`;
  }
}

describe('SessionAuthentication', () => {
  it('offers a session only without Authorization, on the admin and credential-management APIs', () => {
    const { auth } = setUp();
    expect(auth.offersSession(request('GET', {}))).toBe(true);
    expect(auth.offersSession({ ...request('GET', {}), routeOptions: { url: '/aims/rs/scim/v2/Users' } })).toBe(true);
    expect(auth.offersSession({ ...request('GET', { authorization: 'Bearer x' }) })).toBe(false);
    expect(auth.offersSession({ ...request('GET', { cookie: 'other=1' }) })).toBe(false);
    for (const route of ['/authentication/customer/:org/token', '/authentication/customer/:org/whoami', '/health/ready', '/pki/:org/ca.crt']) {
      expect(auth.offersSession({ ...request('POST', {}), url: route, routeOptions: { url: route } })).toBe(false);
    }
  });

  it.each([
    ['GET', {}],
    ['GET', { 'sec-fetch-site': 'none' }],
    ['HEAD', { origin: OWN }],
    ['POST', { origin: OWN }],
    ['POST', { 'sec-fetch-site': 'same-origin' }],
    ['PATCH', { origin: 'https://api.example.test', 'sec-fetch-site': 'same-origin' }],
    ['DELETE', { origin: OWN, 'sec-fetch-site': 'same-origin' }],
  ])('accepts %s with %j', async (method, headers) => {
    expect(await outcome(setUp().auth, request(method, headers))).toBe('accepted');
  });

  it.each([
    ['POST', { origin: 'https://evil.example' }, /not https:\/\/evil\.example/],
    ['POST', { origin: 'null' }, /not null/],
    ['GET', { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' }, /not https:\/\/evil\.example/],
    ['PUT', { 'sec-fetch-site': 'same-site' }, /Sec-Fetch-Site is same-site/],
    ['POST', { 'sec-fetch-site': 'none' }, /Sec-Fetch-Site is none/],
    ['DELETE', {}, /needs Origin/],
    ['POST', { origin: OWN, 'application-id': undefined }, /Application-ID/],
    ['POST', { origin: OWN, 'application-id': ' ' }, /Application-ID/],
    ['OPTIONS', { origin: OWN }, /only with GET, HEAD, POST, PUT, PATCH or DELETE/],
  ])('refuses %s with %j: 403 saying why, recorded for the person', async (method, headers, reason) => {
    const { auth, recorded } = setUp();
    const answer = await outcome(auth, request(method, headers as Record<string, string | undefined>));
    expect(answer).toMatch(/^FORBIDDEN: A call with the session cookie /);
    expect(answer).toMatch(reason);
    expect(recorded).toEqual([expect.objectContaining({ org: 'acme', actor: 'ada', action: 'session.request_refused', outcome: 'failure' })]);
  });

  it('a refused call whose cookie names no live session is 403 and recorded nowhere', async () => {
    const { auth, recorded } = setUp({ session: null });
    expect(await outcome(auth, request('POST', { origin: 'https://evil.example' }))).toMatch(/^FORBIDDEN/);
    expect(recorded).toEqual([]);
  });

  it('401 for a session that is not live, a disabled user, and a password-only session of an administrator', async () => {
    expect(await outcome(setUp({ session: null }).auth, request('GET', {}))).toMatch(/^UNAUTHENTICATED: The session has ended/);
    expect(await outcome(setUp({ state: { ...state, disabled: true } }).auth, request('GET', {}))).toMatch(
      /^UNAUTHENTICATED: The user of this session is disabled/,
    );
    const passwordOnly = setUp({ session: { ...session, amr: ['pwd'] } }).auth;
    expect(await outcome(passwordOnly, request('GET', {}))).toMatch(/^UNAUTHENTICATED: This session was opened with a password alone/);
    const cardholder = setUp({ session: { ...session, amr: ['pwd'] }, state: { ...state, organization_administrator: false } }).auth;
    expect(await outcome(cardholder, request('GET', {}))).toBe('accepted');
  });
});
