'use strict';
// Set-up through the HTTP API, as an integrator would do it: the platform administrator's token
// (bootstrap secret from DATA_DIR), organization `bench`, a system account with role
// Administration, and an EC P-256 certificate uploaded for it (client assertions, DECISIONS 3.3);
// `bench` has automaticDeviceCreation on, for the device workloads.
require('reflect-metadata');
const { Buffer } = require('node:buffer');
const { KeyObject, randomBytes, webcrypto } = require('node:crypto');
const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const { URLSearchParams } = require('node:url');
const x509 = require('@peculiar/x509');
/* global fetch */

x509.cryptoProvider.set(webcrypto);

const ORG = 'bench';
/** Required on every call outside /authentication/ (DECISIONS 6). */
const APPLICATION_HEADERS = { 'application-id': 'com.example.bench', 'application-version': '1.0' };

async function call(baseUrl, method, path, { token, json, form, pem } = {}) {
  const headers = { ...APPLICATION_HEADERS };
  let body;
  if (token) headers.authorization = `Bearer ${token}`;
  if (json) [headers['content-type'], body] = ['application/json', JSON.stringify(json)];
  if (form) [headers['content-type'], body] = ['application/x-www-form-urlencoded', new URLSearchParams(form).toString()];
  if (pem) [headers['content-type'], body] = ['application/x-pem-file', pem];
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

async function expectStatus(what, status, promise) {
  const response = await promise;
  if (response.status !== status) throw new Error(`${what} failed: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

function tokenBySecret(baseUrl, org, clientId, secret) {
  const form = { grant_type: 'client_credentials', client_id: clientId, client_secret: secret };
  return expectStatus(`token for ${clientId}`, 200, call(baseUrl, 'POST', `/authentication/customer/${org}/token`, { form })).then((body) => body.access_token);
}

function bootstrapSecret(dataDir) {
  const file = join(dataDir, 'bootstrap-credentials');
  let text;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new Error(`no ${file}: the platform was not bootstrapped by this run (with DATABASE_URL, use an empty database)`);
  }
  return /client_id=platform-admin\s+client_secret=(\S+)/.exec(text)[1];
}

/** A self-signed EC P-256 certificate; `key` is the node:crypto private key, `kid` its x5t#S256. */
async function makeCertificate() {
  const keys = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  const notBefore = new Date(Date.now() - 3600_000);
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomBytes(8).toString('hex'),
    name: 'CN=bench-client, O=Bench',
    notBefore,
    notAfter: new Date(notBefore.getTime() + 365 * 86_400_000),
    keys,
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
  });
  const kid = Buffer.from(await certificate.getThumbprint('SHA-256')).toString('base64url');
  return { pem: certificate.toString('pem'), key: KeyObject.from(keys.privateKey), kid };
}

/** Answers the context the workloads prepare from. */
async function setUpPlatform(service) {
  const { baseUrl } = service;
  const admin = await tokenBySecret(baseUrl, 'platform', 'platform-admin', bootstrapSecret(service.dataDir));
  await expectStatus('create organization', 201, call(baseUrl, 'POST', '/admin/v1/organizations', { token: admin, json: { id: ORG, name: 'Benchmark' } }));
  const created = await expectStatus(
    'create system account',
    201,
    call(baseUrl, 'POST', `/admin/v1/organizations/${ORG}/system-accounts`, { token: admin, json: { role: 'Administration' } }),
  );
  const account = { clientId: created.clientId, secret: created.secret.value, tokenUrl: created.tokenUrl };
  const certificate = await makeCertificate();
  await expectStatus(
    'certificate upload',
    201,
    call(baseUrl, 'POST', `/admin/v1/organizations/${ORG}/system-accounts/${account.clientId}/certificates`, { token: admin, pem: certificate.pem }),
  );
  // POST /Device creates devices only where automatic device creation is on (DECISIONS 8).
  const settings = { automaticDeviceCreation: true, applicationIdPolicy: 'any' };
  await expectStatus('device creation setting', 200, call(baseUrl, 'PUT', `/admin/v1/organizations/${ORG}/settings`, { token: admin, json: settings }));
  return {
    baseUrl,
    org: ORG,
    account,
    certificate,
    applicationHeaders: APPLICATION_HEADERS,
    /** The platform administrator's token (creates what a workload needs besides the account). */
    adminToken: admin,
    accessToken: () => tokenBySecret(baseUrl, ORG, account.clientId, account.secret),
    tokenFor: (clientId, secret) => tokenBySecret(baseUrl, ORG, clientId, secret),
  };
}

module.exports = { setUpPlatform };
