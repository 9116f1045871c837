'use strict';
// The measured workloads. Each is { name, status?, prepare(ctx) }: status is the one expected
// answer (default 200; any other fails the run), prepare answers the autocannon options of its
// requests (url, method, headers, body or requests); the runner adds connections, duration and
// the status capture. prepare runs again before each run (warm-up, measured), so per-run
// material (fresh assertions, a fresh token) is made for that run.
//
// A workload with `reference: true` is measured against the reference application instead of the
// service (ctx.referenceUrl; its CPU is that process's).
//
// ctx: { baseUrl, referenceUrl, org, account: { clientId, secret, tokenUrl }, certificate: { key, kid },
//        applicationHeaders (needed outside /authentication/), accessToken(),
//        seconds (of the coming run), connections, rates: { [workload]: req/s } }
const { Buffer } = require('node:buffer');
const { randomUUID, sign } = require('node:crypto');
const { URLSearchParams } = require('node:url');
/* global fetch */

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const MIN_ASSERTIONS = 20_000;
// Valid for the longest sensible run: exp - iat may be at most 3600 s (DECISIONS 3.3).
const ASSERTION_LIFETIME_S = 3600;

const tokenUrl = (ctx) => `${ctx.baseUrl}/authentication/customer/${ctx.org}/token`;
const form = (fields) => new URLSearchParams(fields).toString();
const base64url = (value) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

/** An ES256 client assertion with a fresh jti, aud = the Token URL the account reports. */
function signAssertion({ account, certificate }, iat) {
  const claims = { iss: account.clientId, sub: account.clientId, aud: account.tokenUrl, iat, nbf: iat, exp: iat + ASSERTION_LIFETIME_S, jti: randomUUID() };
  const input = `${base64url({ alg: 'ES256', kid: certificate.kid })}.${base64url(claims)}`;
  const signature = sign('sha256', Buffer.from(input), { key: certificate.key, dsaEncoding: 'ieee-p1363' });
  return `${input}.${signature.toString('base64url')}`;
}

/**
 * One form body per request, each with its own assertion (a jti is accepted once): 1.5 times what
 * token-secret managed for this long, at least MIN_ASSERTIONS, all signed before the run starts.
 */
function assertionBodies(ctx) {
  const expected = 1.5 * (ctx.rates['token-secret'] ?? 0) * ctx.seconds;
  const count = Math.max(MIN_ASSERTIONS, Math.ceil(expected));
  const iat = Math.floor(Date.now() / 1000);
  return Array.from({ length: count }, () =>
    form({
      grant_type: 'client_credentials',
      client_id: ctx.account.clientId,
      client_assertion_type: ASSERTION_TYPE,
      client_assertion: signAssertion(ctx, iat),
    }),
  );
}

function tokenByAssertion(ctx) {
  const bodies = assertionBodies(ctx);
  let next = 0;
  return {
    url: tokenUrl(ctx),
    method: 'POST',
    headers: FORM,
    // Each connection builds one request ahead, so stop short of the pool rather than replay a jti.
    maxOverallRequests: bodies.length - 2 * ctx.connections,
    requests: [{ setupRequest: (request) => ({ ...request, body: bodies[next++] }) }],
  };
}

const SCIM = 'application/scim+json';
const DEVICE_SCHEMA = 'urn:vendor:scim:api:cms:1.0:Device';
const BENCH_ATR = '3B7F96000080318065B0846160FB120FFD829000';
const devicesUrl = (ctx) => `${ctx.baseUrl}/aims/rs/scim/v2/Device`;
const deviceBody = (cuid) => JSON.stringify({ schemas: [DEVICE_SCHEMA], externalIds: [{ ATR: BENCH_ATR, CUID: cuid }] });

/** What every Device request carries: the bearer token, Application-ID/-Version (DECISIONS 6), the SCIM media type. */
async function deviceHeaders(ctx) {
  return { ...ctx.applicationHeaders, authorization: `Bearer ${await ctx.accessToken()}`, 'content-type': SCIM, accept: SCIM };
}

/**
 * POST /Device, each request with a CUID no other request uses (a CUID is unique in its
 * organization): this run's start time and process id, then a counter, all digits.
 */
async function deviceCreate(ctx) {
  const prefix = `${Date.now()}${process.pid}`;
  let next = 0;
  return {
    url: devicesUrl(ctx),
    method: 'POST',
    headers: await deviceHeaders(ctx),
    requests: [{ setupRequest: (request) => ({ ...request, body: deviceBody(`${prefix}${String(next++).padStart(9, '0')}`) }) }],
  };
}

/** GET /Device/{id} of one device, created for the run. */
async function deviceGet(ctx) {
  const headers = await deviceHeaders(ctx);
  const created = await fetch(devicesUrl(ctx), { method: 'POST', headers, body: deviceBody(`9${Date.now()}${process.pid}`) });
  if (created.status !== 201) throw new Error(`device-get set-up: POST /Device answered ${created.status} ${await created.text()}`);
  const { id } = await created.json();
  return { url: `${devicesUrl(ctx)}/${id}`, headers: { ...ctx.applicationHeaders, authorization: headers.authorization, accept: SCIM } };
}

const WORKLOADS = [
  {
    name: 'token-secret',
    prepare: (ctx) => ({
      url: tokenUrl(ctx),
      method: 'POST',
      headers: FORM,
      body: form({ grant_type: 'client_credentials', client_id: ctx.account.clientId, client_secret: ctx.account.secret }),
    }),
  },
  { name: 'token-assertion', prepare: tokenByAssertion },
  {
    name: 'probe',
    prepare: async (ctx) => ({
      url: `${ctx.baseUrl}/authentication/customer/${ctx.org}/whoami`,
      headers: { authorization: `Bearer ${await ctx.accessToken()}` },
    }),
  },
  { name: 'device-create', status: 201, prepare: deviceCreate },
  { name: 'device-get', prepare: deviceGet },
  {
    name: 'gateway-list',
    prepare: async (ctx) => ({
      url: `${ctx.baseUrl}/configuration/${ctx.org}/v2/DeliveryGateway/Push`,
      headers: { ...ctx.applicationHeaders, authorization: `Bearer ${await ctx.accessToken()}`, accept: SCIM },
    }),
  },
  // The cheapest route through the whole stack (Fastify, Nest's guards, the access log): the floor
  // of every other route; late, when the service has warmed up and its start-up work is done.
  { name: 'hello', prepare: (ctx) => ({ url: `${ctx.baseUrl}/health/live` }) },
  // Not the platform: a bare Nest + Fastify hello-world in a process of its own (ops/bench/nest-hello.js),
  // the yardstick of this host's speed that the regression guard divides every workload by
  // (ops/bench/regression.js) and issue 35's targets are read against.
  { name: 'nest-hello', reference: true, prepare: (ctx) => ({ url: `${ctx.referenceUrl}/health/live` }) },
];

module.exports = { WORKLOADS };
