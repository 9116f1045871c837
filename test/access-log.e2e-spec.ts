import { TestApp, createTestApp, eventually } from '@app/testing';

/**
 * The access log (docs/decisions.md, "Bearer checks at scale"): one line per request at info (the
 * default level, libs/config load-config.spec), with a fixed schema whose route is the pattern, never
 * the path as sent (an id or a code in a path stays out of the log, DECISIONS 11); `LOG_LEVEL=warn`
 * leaves it out.
 */
const DEVICE_ID = '6f1c2a9e-4b7d-4e21-9a3f-0c8d5e7b1a24';

function accessLines(t: TestApp): Record<string, unknown>[] {
  return t.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === 'request');
}

describe('the access log', () => {
  describe('at info', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp({ env: { LOG_LEVEL: 'info' } });
    });
    afterAll(() => t.close());

    it('writes one line per request: request id, method, route pattern, status, duration, nothing else', async () => {
      const answer = await t.http.get(`/aims/rs/scim/v2/Device/${DEVICE_ID}`);
      expect(answer.status).toBe(401);
      const correlationId = answer.headers['x-correlation-id'];
      expect(correlationId).toMatch(/^[0-9a-f-]{36}$/);
      const mine = () => accessLines(t).filter((line) => line.reqId === correlationId);
      await eventually(async () => mine().length > 0, 'the access log line');
      const lines = mine();
      expect(lines).toHaveLength(1);
      expect(lines[0]).toEqual({
        level: 30,
        time: expect.any(String),
        service: 'credential-platform',
        reqId: correlationId,
        method: 'GET',
        route: '/aims/rs/scim/v2/Device/:id',
        status: 401,
        ms: expect.any(Number),
        msg: 'request',
      });
      expect(t.logs.filter((line) => line.includes(DEVICE_ID))).toEqual([]);
    });
  });

  describe('at warn', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp({ env: { LOG_LEVEL: 'warn' } });
    });
    afterAll(() => t.close());

    it('writes none', async () => {
      const answer = await t.http.get('/health/live');
      expect(answer.status).toBe(200);
      // The line would be written as the answer finishes; a second request's answer comes after it.
      expect((await t.http.get('/health/live')).status).toBe(200);
      expect(accessLines(t)).toEqual([]);
    });
  });
});
