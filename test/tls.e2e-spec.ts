import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TLSSocket, connect } from 'node:tls';
import type { FastifyInstance } from 'fastify';
import { openssl, testConfig } from '@app/testing';
import { createAdapter } from '../apps/api/src/app.setup';

const KEYS = {
  ECDSA: ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256'],
  RSA: ['-newkey', 'rsa:2048'],
} as const;

type Handshake = { ok: true; socket: TLSSocket; cipher: string; protocol: string | null } | { ok: false; error: string };

/**
 * The service's own HTTPS listener (TLS_CERT_FILE and TLS_KEY_FILE; DECISIONS 13): TLS 1.2 only with
 * ECDHE and an AEAD cipher (AES-GCM or ChaCha20-Poly1305) in the server's order, TLS 1.3 with
 * Node's suites, and no renegotiation. Driven by a TLS client against the adapter main.ts uses.
 */
describe.each(Object.keys(KEYS) as (keyof typeof KEYS)[])('the HTTPS listener with an %s certificate', (keyType) => {
  let dir: string;
  let fastify: FastifyInstance;
  let port: number;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tls-'));
    const cert = join(dir, 'cert.pem');
    const key = join(dir, 'key.pem');
    openssl('req', '-x509', ...KEYS[keyType], '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=127.0.0.1');
    const adapter = createAdapter(testConfig('postgres://unused@127.0.0.1/unused', { TLS_CERT_FILE: cert, TLS_KEY_FILE: key }));
    fastify = adapter.getInstance() as unknown as FastifyInstance;
    fastify.get('/', async () => 'ok');
    await fastify.listen({ port: 0, host: '127.0.0.1' });
    port = (fastify.server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await fastify.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const handshake = (options: { ciphers?: string; minVersion?: 'TLSv1.2' | 'TLSv1.3'; maxVersion?: 'TLSv1.2' | 'TLSv1.3' }) =>
    new Promise<Handshake>((done) => {
      const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...options }, () =>
        done({ ok: true, socket, cipher: socket.getCipher().name, protocol: socket.getProtocol() }),
      );
      socket.once('error', (error: NodeJS.ErrnoException) => done({ ok: false, error: error.code ?? error.message }));
    });
  const attempt = async (options: Parameters<typeof handshake>[0]) => {
    const result = await handshake(options);
    if (result.ok) result.socket.destroy();
    return result.ok ? { ok: true, cipher: result.cipher, protocol: result.protocol } : { ok: false };
  };
  const kx = keyType === 'ECDSA' ? 'ECDHE-ECDSA' : 'ECDHE-RSA';

  it.each([`${kx}-AES128-SHA`, `${kx}-AES128-SHA256`, `${kx}-AES256-SHA384`, 'AES128-GCM-SHA256', 'AES256-SHA', 'DHE-RSA-AES128-GCM-SHA256'])(
    'refuses TLS 1.2 with %s (CBC, or no ECDHE)',
    async (cipher) => {
      expect(await attempt({ maxVersion: 'TLSv1.2', ciphers: cipher })).toEqual({ ok: false });
    },
  );

  it.each([`${kx}-AES128-GCM-SHA256`, `${kx}-AES256-GCM-SHA384`, `${kx}-CHACHA20-POLY1305`])('accepts TLS 1.2 with %s', async (cipher) => {
    expect(await attempt({ maxVersion: 'TLSv1.2', ciphers: cipher })).toEqual({ ok: true, cipher, protocol: 'TLSv1.2' });
  });

  it("chooses in the server's order, not the client's", async () => {
    const clientOrder = `${kx}-CHACHA20-POLY1305:${kx}-AES256-GCM-SHA384:${kx}-AES128-GCM-SHA256`;
    expect(await attempt({ maxVersion: 'TLSv1.2', ciphers: clientOrder })).toEqual({ ok: true, cipher: `${kx}-AES128-GCM-SHA256`, protocol: 'TLSv1.2' });
  });

  it('keeps TLS 1.3 with its default suites', async () => {
    expect(await attempt({ minVersion: 'TLSv1.3' })).toEqual({ ok: true, cipher: 'TLS_AES_256_GCM_SHA384', protocol: 'TLSv1.3' });
  });

  it('refuses a renegotiation the client starts', async () => {
    const result = await handshake({ maxVersion: 'TLSv1.2' });
    if (!result.ok) throw new Error(result.error);
    const outcome = await new Promise<string>((done) => {
      result.socket.once('error', (error: NodeJS.ErrnoException) => done(`refused: ${error.code}`));
      result.socket.once('close', () => done('refused: closed'));
      result.socket.renegotiate({ rejectUnauthorized: false }, (error) => done(error ? `refused: ${error.message}` : 'renegotiated'));
      // The server sees the renegotiation request when it next reads.
      result.socket.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    });
    result.socket.destroy();
    expect(outcome).toMatch(/^refused/);
  });
});
