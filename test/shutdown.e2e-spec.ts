import { PLATFORM_ADMIN_SECRET, TestApp, createTestApp, platformAdminToken, tokenRequest } from '@app/testing';
import { ShutdownState } from '../apps/api/src/shutdown';

/**
 * Issue 15 item 3, the part inside one process: once a shutdown starts, readiness is red at once
 * and a request that still arrives gets a 503 in its route family's format, with Retry-After and
 * Connection: close, never Fastify's own answer. (The signal handling and draining across workers
 * is in test/chaos-shutdown.)
 */
describe('shutdown: readiness first, then 503 in the family format', () => {
  let t: TestApp;
  let admin: string;

  beforeAll(async () => {
    t = await createTestApp();
    admin = await platformAdminToken(t.http);
  });
  afterAll(() => t.close());

  it('before: ready; during: ready 503 (shutdown: closing), live 200, and every family answers 503 with its own error body', async () => {
    expect((await t.bare.get('/health/ready')).status).toBe(200);
    t.app.get(ShutdownState).closing = true;
    try {
      const ready = await t.bare.get('/health/ready');
      expect({ status: ready.status, shutdown: ready.body.checks.shutdown }).toEqual({ status: 503, shutdown: 'closing' });
      expect((await t.bare.get('/health/live')).status).toBe(200);

      const token = await tokenRequest(t.http, 'platform', {
        grant_type: 'client_credentials',
        client_id: 'platform-admin',
        client_secret: PLATFORM_ADMIN_SECRET,
      });
      expect({ status: token.status, retryAfter: token.headers['retry-after'], connection: token.headers.connection, body: token.body }).toEqual({
        status: 503,
        retryAfter: '1',
        connection: 'close',
        body: { error: 'temporarily_unavailable', error_description: 'This instance is shutting down; retry, another instance will answer.' },
      });
      const scim = await t.http.get('/admin/v1/organizations').auth(admin, { type: 'bearer' });
      expect({ status: scim.status, retryAfter: scim.headers['retry-after'], body: scim.body }).toEqual({
        status: 503,
        retryAfter: '1',
        body: {
          schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
          status: '503',
          detail: 'This instance is shutting down; retry, another instance will answer.',
        },
      });
    } finally {
      t.app.get(ShutdownState).closing = false;
    }
    expect((await t.bare.get('/health/ready')).status).toBe(200);
  });
});
