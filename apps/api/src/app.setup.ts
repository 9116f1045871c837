import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { DEFAULT_CIPHERS, TLSSocket } from 'node:tls';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DomainError, canonicalResourceSpelling, declareErrorResponses, resourceAnswer, routeFamilyOfRequest } from '@app/common';
import { AppConfig } from '@app/config';
import { SignInSessions, loginLocation } from '@app/auth';
import { Loggers, Metrics, annotateRequest } from '@app/observability';
import { toErrorResponse } from './error-response';
import { ServiceClosingError, ShutdownState } from './shutdown';
import { HttpExceptionFilter } from './http-exception.filter';
import { registerPortal } from './portal';

/** A body parser of Fastify, given the body as read (a string or a Buffer). */
type ContentTypeParser = (request: FastifyRequest, body: string | Buffer, done: (error: Error | null, body?: unknown) => void) => void;

/** DECISIONS 6: bodies larger than 1 MiB are refused with 413. */
const BODY_LIMIT = 1024 * 1024;

/**
 * TLS 1.2 offers only forward-secret AEAD suites (ECDHE with AES-GCM or ChaCha20-Poly1305; no CBC,
 * which LUCKY13 and its kin attack), in this order; TLS 1.3 keeps Node's suites (DECISIONS 13).
 */
const TLS_CIPHERS = [
  ...DEFAULT_CIPHERS.split(':').filter((suite) => suite.startsWith('TLS_')),
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/**
 * The API docs (DECISIONS 1) are public: no page may frame them, and they run only their own files.
 * The Swagger UI page loads every script from a file (swagger-ui-init.js included), so script-src
 * 'self' suffices; its markup carries inline styles, hence 'unsafe-inline' for styles only, and its
 * stylesheet draws icons from data: URIs. "Try it out" calls this origin.
 */
const API_DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Nest's Fastify adapter with the rules every answer a route returns follows, applied where Nest hands
 * the answer to Fastify: the resource's ETag and an answer serialised once (resourceAnswer), and no
 * media type on 204 No Content, which has no body. Here rather than in a global interceptor: a route
 * with no interceptor runs without an rxjs pipeline per request (issue 35, docs/performance.md).
 * Errors leave through HttpExceptionFilter instead.
 */
class PlatformFastifyAdapter extends FastifyAdapter {
  override reply(response: FastifyReply, body: unknown, statusCode?: number): FastifyReply {
    if ((statusCode ?? response.statusCode) === 204) {
      response.removeHeader('Content-Type');
      return super.reply(response, body, statusCode);
    }
    return super.reply(response, resourceAnswer(response, body), statusCode);
  }
}

/** The Fastify adapter with the transport rules: body limit, TLS, trusted proxies, OIP hosts. */
export function createAdapter(config: AppConfig): FastifyAdapter {
  const oipHosts = new Set(config.oipAuthHosts);
  const https = config.tlsCertFile && config.tlsKeyFile;
  const adapter = new PlatformFastifyAdapter({
    bodyLimit: BODY_LIMIT,
    genReqId: () => randomUUID(),
    // The source address is the peer, or X-Forwarded-For only behind a trusted proxy (DECISIONS 4).
    trustProxy: config.trustedProxies.length > 0 ? config.trustedProxies : false,
    ...(https
      ? {
          https: {
            cert: readFileSync(config.tlsCertFile!),
            key: readFileSync(config.tlsKeyFile!),
            minVersion: 'TLSv1.2' as const,
            // Smart-card sign-in (DECISIONS 14.1): ask every client for a certificate, require none
            // (a browser without a card still reaches the password form), accept any at the
            // handshake; the login page checks it against the organization's CA.
            requestCert: true,
            rejectUnauthorized: false,
            ciphers: TLS_CIPHERS,
            honorCipherOrder: true,
          },
        }
      : {}),
    // Errors the router raises before any route runs (a path that is not UTF-8, a parameter longer
    // than any id) leave in the route family's error format too, not Fastify's own.
    // While shutting down, the onRequest hook below answers in the family's format instead.
    return503OnClosing: false,
    // An OCSP request by GET carries its DER in the path (RFC 6960 A.1); each parameter's declared format bounds it further.
    routerOptions: { maxParamLength: 1024 },
    frameworkErrors: (error: Error, request: FastifyRequest, reply: FastifyReply) => {
      const answer = toErrorResponse(error, request, String(request.id));
      void reply.code(answer.status).headers(answer.headers).send(answer.body);
    },
    // The positioning variant has its own host names; its routes live under /oip (DECISIONS 3.2).
    // The customer form of credential management names resources case-insensitively (DECISIONS 1).
    rewriteUrl: (req: { url?: string; headers: { host?: string } }): string => {
      const host = (req.headers.host ?? '').split(':')[0].toLowerCase();
      const url = canonicalResourceSpelling(req.url ?? '/');
      return oipHosts.has(host) && !url.startsWith('/oip/') ? `/oip${url}` : url;
    },
  });
  // A TLS 1.2 client may not renegotiate (each renegotiation costs the server a handshake; DECISIONS 13).
  if (https) adapter.getInstance().server.on('secureConnection', (socket: TLSSocket) => socket.disableRenegotiation());
  return adapter;
}

/** Everything registered on the application after it is created: parsers, hooks, filter, docs. */
export async function configureApp(app: NestFastifyApplication, config: AppConfig, { logger, accessLogger }: Loggers, metrics: Metrics): Promise<void> {
  const fastify = app.getHttpAdapter().getInstance() as unknown as FastifyInstance;
  // An empty body is no body, whatever Content-Type says: many clients send a JSON Content-Type on
  // every call, DELETE and bodiless actions included (docs/decisions.md, "Bad input"). A route
  // that needs a body refuses the missing one itself, as it does when Content-Type is absent.
  // Fastify's JSON parser reads a string or a Buffer (Nest hands it Buffers), though its type says string.
  const jsonParser = fastify.getDefaultJsonParser('error', 'error') as unknown as ContentTypeParser;
  const jsonOrNothing: ContentTypeParser = (request, body, done) => (body.length === 0 ? done(null, undefined) : jsonParser(request, body, done));
  // Declared through Nest so that it replaces Nest's own application/json parser (registered at init).
  app.useBodyParser('application/json', { bodyLimit: BODY_LIMIT }, jsonOrNothing);
  // SCIM and the vendor media types are JSON (DECISIONS 6).
  fastify.addContentTypeParser(/^application\/[\w.-]+\+json(\s*;.*)?$/i, { parseAs: 'string' }, jsonOrNothing);
  // OCSP requests are binary DER (RFC 6960 appendix A).
  fastify.addContentTypeParser('application/ocsp-request', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  // PEM uploads (DECISIONS 11), and anything else as text, so that handlers can say what is wrong.
  fastify.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));

  const shutdown = app.get(ShutdownState);
  fastify.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Correlation-ID', request.id).header('X-Content-Type-Options', 'nosniff');
    // Fastify builds routeOptions afresh on each read.
    const route = request.routeOptions.url;
    // The request's trace span, when tracing is on (DECISIONS 13.1): its route template and correlation id.
    annotateRequest(request.method, route, String(request.id));
    if (shutdown.closing && !route?.startsWith('/health/')) {
      const answer = toErrorResponse(new ServiceClosingError(), request, String(request.id));
      void reply.code(answer.status).headers(answer.headers).header('Connection', 'close').send(answer.body);
      return;
    }
    if (config.tlsCertFile) reply.header('Strict-Transport-Security', 'max-age=31536000; includeSubDomains');
    if (route?.startsWith('/api-docs')) reply.header('Content-Security-Policy', API_DOCS_CSP);
    done();
  });
  // A form body on a family that reads JSON only (the administration API, DECISIONS 11): 415 naming
  // what to send, declared once for the family rather than left to each route's schema. An empty
  // body is no body, whatever Content-Type says (docs/decisions.md, "Bad input").
  fastify.addHook('preValidation', (request, reply, done) => {
    const type = request.headers['content-type']?.split(';')[0].trim().toLowerCase();
    if (type !== 'application/x-www-form-urlencoded' && type !== 'multipart/form-data') return done();
    const body = request.body;
    const empty = body === undefined || body === null || body === '' || (typeof body === 'object' && Object.keys(body).length === 0);
    if (empty || routeFamilyOfRequest(request).formBodies) return done();
    const refusal = new DomainError(
      'UNSUPPORTED_MEDIA_TYPE',
      `Content-Type ${type} is not accepted by the administration API; send the body as application/json.`,
    );
    const answer = toErrorResponse(refusal, request, String(request.id));
    void reply.code(answer.status).headers(answer.headers).send(answer.body);
  });
  fastify.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions?.url ?? 'unmatched';
    const seconds = reply.elapsedTime / 1000;
    metrics.httpRequests.observe({ method: request.method, route, status: String(reply.statusCode) }, seconds);
    accessLogger.info({ reqId: request.id, method: request.method, route, status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 }, 'request');
    done();
  });
  // Nest routes errors raised before a handler (unreadable body, too large) through this filter too.
  app.useGlobalFilters(new HttpExceptionFilter(logger));

  if (config.apiDocs) {
    const document = declareErrorResponses(
      SwaggerModule.createDocument(
        app,
        new DocumentBuilder()
          .setTitle('Credential-management platform')
          .setDescription('Token service, administration API, credential management, devices and push delivery gateways.')
          .addBearerAuth()
          .build(),
      ),
    );
    SwaggerModule.setup('api-docs', app, document);
  }
  const sessions = app.get(SignInSessions);
  registerPortal(
    fastify,
    { portalDir: config.portalDir, sessionOrganization: async (request) => (await sessions.fromRequest(request))?.org ?? null, loginLocation },
    logger,
  );
}
