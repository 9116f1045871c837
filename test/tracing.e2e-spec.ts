import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { IncomingMessage, Server, createServer } from 'node:http';
import { join, resolve } from 'node:path';
import { createSuiteDatabase, freePort, startService, stopAllServices, stopService, waitReady } from '@app/testing';
import { serviceArgs } from '../ops/service-command';

const ADMIN_SECRET = `tracing-admin-secret-${randomBytes(12).toString('hex')}`;
const CORRELATION = 'app.correlation_id';

interface OtlpAttribute {
  key: string;
  value: Record<string, unknown>;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: OtlpAttribute[];
}
interface OtlpBody {
  resourceSpans: { resource?: { attributes?: OtlpAttribute[] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
}

const valueOf = (attribute: OtlpAttribute) => Object.values(attribute.value)[0];
const attributesOf = (span: OtlpSpan) => Object.fromEntries((span.attributes ?? []).map((a) => [a.key, valueOf(a)]));

/**
 * OpenTelemetry traces (issue 36 item 4, DECISIONS 13.2): the real service, started with
 * OTEL_EXPORTER_OTLP_ENDPOINT pointing at an OTLP/HTTP receiver in this test (JSON bodies), sends the
 * spans of one token request: the HTTP request named by its route template and carrying the
 * correlation id it answered with, its SQL statements and its HSM sign, under one trace id; no
 * attribute carries the client secret, the access token, a query string or the caller's address.
 * Without the variable, nothing of the OpenTelemetry SDK is loaded (only the no-op API that prom-client loads anyway).
 */
describe('traces (DECISIONS 13.2)', () => {
  let receiver: Server;
  const bodies: OtlpBody[] = [];
  const raw: string[] = [];
  let endpoint: string;

  beforeAll(async () => {
    receiver = createServer((request: IncomingMessage, response) => {
      let text = '';
      request.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      request.on('end', () => {
        if (request.url === '/v1/traces' && (request.headers['content-type'] ?? '').startsWith('application/json')) {
          raw.push(text);
          bodies.push(JSON.parse(text) as OtlpBody);
        }
        response.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
      });
    });
    const port = await freePort();
    await new Promise<void>((done) => receiver.listen(port, '127.0.0.1', done));
    endpoint = `http://127.0.0.1:${port}`;
  });
  afterAll(async () => {
    await stopAllServices();
    await new Promise((done) => receiver.close(done));
  });

  async function serviceEnv(extra: Record<string, string>) {
    const dataDir = join(process.env.TEST_RUN_DIR!, `tracing-${randomBytes(4).toString('hex')}`);
    mkdirSync(dataDir, { recursive: true });
    const port = await freePort();
    return {
      base: `http://127.0.0.1:${port}`,
      env: {
        NODE_ENV: 'test',
        PORT: String(port),
        HOST: '127.0.0.1',
        METRICS_PORT: String(await freePort()),
        DATA_DIR: dataDir,
        DATABASE_URL: await createSuiteDatabase(),
        PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
        PKCS11_MODULE: process.env.TEST_PKCS11_MODULE!,
        PKCS11_TOKEN_LABEL: process.env.TEST_PKCS11_TOKEN_LABEL!,
        PKCS11_PIN: process.env.TEST_PKCS11_PIN!,
        SOFTHSM2_CONF: process.env.SOFTHSM2_CONF!,
        SECRET_PEPPER: 'tracing-pepper-0123456789abcdef0123456789abcdef',
        DATA_ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
        PLATFORM_ADMIN_SECRET: ADMIN_SECRET,
        ...extra,
      },
    };
  }

  const tokenRequest = (base: string) =>
    fetch(`${base}/authentication/customer/platform/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'User-Agent': 'tracing-test-agent/1.0' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'platform-admin', client_secret: ADMIN_SECRET }),
    });

  it('one token request: its HTTP span (route template, correlation id), its SQL and its HSM sign share one trace id; nothing secret in any attribute', async () => {
    const { base, env } = await serviceEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '100' });
    const service = startService(env);
    await waitReady(base, service);
    const response = await tokenRequest(base);
    expect(response.status).toBe(200);
    const correlationId = response.headers.get('x-correlation-id')!;
    const accessToken = ((await response.json()) as { access_token: string }).access_token;
    expect(correlationId).toMatch(/^[0-9a-f-]{36}$/);

    const spans = () => bodies.flatMap((body) => body.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)));
    let server: OtlpSpan | undefined;
    let trace: OtlpSpan[] = [];
    for (let i = 0; i < 200; i++) {
      server = spans().find((span) => attributesOf(span)[CORRELATION] === correlationId);
      trace = server ? spans().filter((span) => span.traceId === server!.traceId) : [];
      if (trace.some((span) => span.name === 'hsm.sign') && trace.some((span) => attributesOf(span)['db.system'] || attributesOf(span)['db.system.name']))
        break;
      await new Promise((done) => setTimeout(done, 100));
    }
    expect(server).toMatchObject({ name: 'POST /authentication/customer/:org/token', kind: 2 });
    expect(attributesOf(server!)).toMatchObject({ 'http.route': '/authentication/customer/:org/token', [CORRELATION]: correlationId });
    const sign = trace.find((span) => span.name === 'hsm.sign');
    expect(sign).toBeDefined();
    expect(attributesOf(sign!)).toMatchObject({ 'hsm.key_label': 'JWT_KEY' });
    const sql = trace.filter((span) => attributesOf(span)['db.system'] === 'postgresql' || attributesOf(span)['db.system.name'] === 'postgresql');
    expect(sql.length).toBeGreaterThan(0);
    // The statements carry placeholders, never the values.
    for (const span of sql) {
      const attributes = attributesOf(span);
      expect(Object.keys(attributes).filter((key) => /values|parameter/.test(key))).toEqual([]);
    }
    // The resource names the service and its version, and nothing of the host or process.
    const resource = Object.fromEntries((bodies[0].resourceSpans[0].resource?.attributes ?? []).map((a) => [a.key, valueOf(a)]));
    expect(resource).toMatchObject({ 'service.name': 'credential-platform', 'service.version': expect.any(String) });
    expect(Object.keys(resource).filter((key) => /^(host|process)\./.test(key))).toEqual([]);
    // Nothing secret or personal in anything sent: not the client secret, not the token (nor its signature), not the caller's address or agent.
    const everything = raw.join('\n');
    expect(everything).not.toContain(ADMIN_SECRET);
    expect(everything).not.toContain(accessToken.split('.')[2]);
    expect(everything).not.toContain('tracing-test-agent');
    const keys = new Set(spans().flatMap((span) => (span.attributes ?? []).map((a) => a.key)));
    expect(
      [...keys].filter((key) => /^(client\.|net\.peer\.ip|network\.peer\.|user_agent\.|http\.user_agent|http\.client_ip|url\.query|db\.user)/.test(key)),
    ).toEqual([]);
    for (const span of spans().filter((s) => s.kind === 2)) {
      const attributes = attributesOf(span);
      for (const key of ['http.target', 'url.path', 'http.url', 'url.full']) {
        if (attributes[key] !== undefined) expect({ key, value: attributes[key] }).toEqual({ key, value: attributes['http.route'] });
      }
    }
    expect(await stopService(service)).toBe(0);
  }, 120_000);

  it('a query string never reaches a span', async () => {
    const before = raw.length;
    const { base, env } = await serviceEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '100' });
    const service = startService(env);
    await waitReady(base, service);
    const marker = `q${randomBytes(8).toString('hex')}`;
    const response = await fetch(`${base}/authentication/customer/platform/.well-known/openid-configuration?access_token=${marker}`);
    const correlationId = response.headers.get('x-correlation-id')!;
    for (let i = 0; i < 100 && !raw.slice(before).some((text) => text.includes(correlationId)); i++) await new Promise((done) => setTimeout(done, 100));
    expect(raw.slice(before).some((text) => text.includes(correlationId))).toBe(true);
    expect(raw.join('\n')).not.toContain(marker);
    expect(await stopService(service)).toBe(0);
  }, 120_000);

  it('without OTEL_EXPORTER_OTLP_ENDPOINT no OpenTelemetry SDK, exporter or instrumentation module is loaded', async () => {
    const { base, env } = await serviceEnv({});
    const report = join(process.env.TEST_RUN_DIR!, `otel-modules-${randomBytes(4).toString('hex')}.json`);
    const probe = join(process.env.TEST_RUN_DIR!, `otel-probe-${randomBytes(4).toString('hex')}.js`);
    writeFileSync(
      probe,
      `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(report)}, JSON.stringify(Object.keys(require.cache).filter((k) => k.includes('@opentelemetry')))));\n`,
    );
    const child = spawn(process.execPath, serviceArgs(['--require', probe]), {
      cwd: resolve(__dirname, '..'),
      env: { PATH: process.env.PATH!, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    const service = { process: child, output: () => output, exited };
    try {
      await waitReady(base, service);
      expect((await tokenRequest(base)).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    // prom-client's process metrics load the no-op API (@opentelemetry/api) themselves, tracing or not; nothing else may load.
    const loaded = JSON.parse(readFileSync(report, 'utf8')) as string[];
    expect(loaded.filter((path) => !path.includes('/node_modules/@opentelemetry/api/'))).toEqual([]);
  }, 120_000);
});
