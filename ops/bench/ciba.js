#!/usr/bin/env node
'use strict';
// The CIBA figure of `npm run bench:push` (issue 25 item 4; DECISIONS 16), which calls
// cibaApprovalToPoll on its service; alone, `node ops/bench/ciba.js` measures only this figure. On
// this machine, over HTTP, the built service in a child process on its embedded defaults:
//   approval -> next successful poll   p99 of the time from the app's approval (its answer received:
//                                      the decision committed) to the client's poll that gets the
//                                      tokens, target < interval + 100 ms
// BENCH_CIBA_PEOPLE (50) cardholders, each with an authenticator app (a P-256 key registered with a
// signed challenge), each run BENCH_CIBA_ROUNDS (10) flows one after the other, all people at once:
// the client initiates and polls every BENCH_CIBA_INTERVAL_S (1) seconds, as openid-client does
// (it waits `interval` after each answer); the app approves after a random delay of up to two
// intervals, so approvals fall anywhere in a poll cycle. The app learns the request's id as the push
// carries it, read here from the outbox row (the delivery itself is the other figure of bench:push).
const { Buffer } = require('node:buffer');
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const { generateKeyPairSync, sign } = require('node:crypto');
const { performance } = require('node:perf_hooks');
const { URLSearchParams } = require('node:url');
const { setTimeout: sleep } = require('node:timers/promises');
const { ROOT, ensureDependencies, ensureDebianPackages, build } = require('../setup');
const { startService, waitReady, stopService, removeWorkDir, connectDatabase, logTail } = require('./service');
const { setUpPlatform } = require('./platform');
/* global fetch */

const PEOPLE = Number(process.env.BENCH_CIBA_PEOPLE || 50);
const ROUNDS = Number(process.env.BENCH_CIBA_ROUNDS || 10);
const INTERVAL_S = Number(process.env.BENCH_CIBA_INTERVAL_S || 1);
const TARGET_BEYOND_INTERVAL_MS = 100;
const CIBA_GRANT = 'urn:openid:params:grant-type:ciba';
const PASSWORD = 'bench-cardholder-passphrase';
const progress = (message) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${message}\n`);
const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

async function request(baseUrl, method, path, { token, json, form, headers = {} } = {}) {
  const all = { 'application-id': 'com.example.bench', 'application-version': '1.0', ...headers };
  let body;
  if (token) all.authorization = `Bearer ${token}`;
  if (json) [all['content-type'], body] = ['application/json', JSON.stringify(json)];
  if (form) [all['content-type'], body] = ['application/x-www-form-urlencoded', new URLSearchParams(form).toString()];
  const response = await fetch(`${baseUrl}${path}`, { method, headers: all, body });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

async function expect(what, status, promise) {
  const response = await promise;
  if (response.status !== status) throw new Error(`${what}: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

/** A cardholder with a password and one registered authenticator app; answers the app's id and key. */
async function person(ctx, userName) {
  const { baseUrl, org, adminToken } = ctx;
  await expect(
    `create ${userName}`,
    201,
    request(baseUrl, 'POST', `/admin/v1/organizations/${org}/users`, { token: adminToken, json: { userName, role: 'Cardholder', password: PASSWORD } }),
  );
  const grant = await expect(
    `password grant ${userName}`,
    200,
    request(baseUrl, 'POST', `/authentication/customer/${org}/token`, { form: { grant_type: 'password', username: userName, password: PASSWORD } }),
  );
  const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = pair.publicKey.export({ format: 'jwk' });
  const es256 = (text) => sign('sha256', Buffer.from(text, 'utf8'), { key: pair.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url');
  const base = '/aims/rs/scim/v2/Self/Authenticators';
  const challenge = await expect('challenge', 200, request(baseUrl, 'POST', `${base}/.challenge`, { token: grant.access_token }));
  const app = await expect(
    'register authenticator',
    201,
    request(baseUrl, 'POST', base, {
      token: grant.access_token,
      json: {
        schemas: ['urn:vendor:scim:api:cms:1.0:Authenticator'],
        displayName: 'Bench phone',
        operatingSystem: 'Android',
        pushHandle: `bench-handle-${userName}`,
        publicKey: { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y },
        challenge: challenge.challenge,
        signature: es256(challenge.signingInput),
      },
    }),
  );
  return { userName, authenticatorId: app.id, es256 };
}

/** One flow: initiate, poll at the interval, approve after a random delay; answers approval -> tokens in ms. */
async function flow(ctx, db, client, who) {
  const { baseUrl, org } = ctx;
  const credentials = { client_id: client.clientId, client_secret: client.secret };
  const started = await expect(
    'backchannel authentication',
    200,
    request(baseUrl, 'POST', `/authentication/customer/${org}/backchannel-authentication`, {
      form: { ...credentials, login_hint: who.userName, scope: 'openid', binding_message: 'Bench sign-in' },
    }),
  );
  const { rows } = await db(
    `SELECT r.id FROM backchannel_requests r JOIN users u ON u.id = r.user_id WHERE u.org_id = $1 AND u.user_name = $2 AND r.state = 'pending'
      ORDER BY r.created_at DESC LIMIT 1`,
    [org, who.userName],
  );
  const requestId = rows[0].id;
  let approvedAt;
  const approval = (async () => {
    await sleep(Math.random() * 2 * INTERVAL_S * 1000);
    await expect(
      'approve',
      200,
      request(baseUrl, 'POST', `/authentication/customer/${org}/backchannel-requests/${requestId}/decision`, {
        json: { authenticator: who.authenticatorId, decision: 'approve', signature: who.es256(`ciba-approval.${org}.${requestId}.approve`) },
      }),
    );
    approvedAt = performance.now();
  })();
  // Awaited once the poll succeeds; a failed approval meanwhile must not end the bench as an unhandled
  // rejection that skips stopping the service (the poll then ends with expired_token and throws).
  approval.catch(() => undefined);
  for (;;) {
    await sleep(started.interval * 1000);
    const polled = await request(baseUrl, 'POST', `/authentication/customer/${org}/token`, {
      form: { ...credentials, grant_type: CIBA_GRANT, auth_req_id: started.auth_req_id },
    });
    if (polled.status === 200) {
      const at = performance.now();
      await approval;
      return at - approvedAt;
    }
    if (polled.body?.error !== 'authorization_pending') throw new Error(`poll: ${polled.status} ${JSON.stringify(polled.body)}`);
  }
}

/** What a service measured by cibaApprovalFigure needs in its configuration. */
const CIBA_SERVICE_ENV = { BACKCHANNEL_POLL_INTERVAL_S: String(INTERVAL_S) };

/**
 * The figure, on a running service started with CIBA_SERVICE_ENV and set up by setUpPlatform, with
 * `connection` (pg) to its database: answers { p50Ms, p99Ms, maxMs, beyondMs (p99 less the
 * interval), intervalS, samples }.
 */
async function cibaApprovalToPoll(ctx, connection) {
  const client = await expect(
    'CIBA system account',
    201,
    request(ctx.baseUrl, 'POST', `/admin/v1/organizations/${ctx.org}/system-accounts`, {
      token: ctx.adminToken,
      json: { role: 'Issuance', backchannelAuthentication: { tokenDeliveryMode: 'poll' } },
    }),
  );
  const account = { clientId: client.clientId, secret: client.secret.value };
  progress(`registering ${PEOPLE} people with an authenticator app...`);
  const people = [];
  for (let i = 0; i < PEOPLE; i++) people.push(await person(ctx, `ciba.person${String(i).padStart(3, '0')}`));
  // One connection, one statement at a time: the flows take turns for their one lookup.
  let turn = Promise.resolve();
  const db = (sql, parameters) => (turn = turn.then(() => connection.query(sql, parameters)));
  const latencies = [];
  progress(`CIBA: ${PEOPLE} x ${ROUNDS} flows, interval ${INTERVAL_S} s...`);
  await Promise.all(
    people.map(async (who) => {
      for (let round = 0; round < ROUNDS; round++) latencies.push(await flow(ctx, db, account, who));
    }),
  );
  const sorted = latencies.sort((a, b) => a - b);
  const p99Ms = percentile(sorted, 99);
  return {
    p50Ms: percentile(sorted, 50),
    p99Ms,
    maxMs: sorted[sorted.length - 1],
    beyondMs: p99Ms - INTERVAL_S * 1000,
    intervalS: INTERVAL_S,
    samples: sorted.length,
  };
}

async function main() {
  // Installs only when nothing is installed: a worktree whose node_modules is shared must never reinstall.
  if (!existsSync(join(ROOT, 'node_modules'))) ensureDependencies();
  ensureDebianPackages([{ name: 'softhsm2', binary: 'softhsm2-util' }]);
  build();
  const service = await startService({ logLevel: process.env.LOG_LEVEL || 'warn', extraEnv: CIBA_SERVICE_ENV });
  try {
    await waitReady(service);
    const ctx = await setUpPlatform(service);
    const connection = await connectDatabase(service);
    let figure;
    try {
      figure = await cibaApprovalToPoll(ctx, connection);
    } finally {
      await connection.end();
    }
    const ms = (value) => `${value.toFixed(1)} ms`;
    const met = figure.beyondMs < TARGET_BEYOND_INTERVAL_MS;
    process.stdout.write(
      [
        `CIBA approval -> next successful poll (${figure.samples} flows, interval ${INTERVAL_S} s, ${PEOPLE} at once)`,
        `  p50 ${ms(figure.p50Ms)}, p99 ${ms(figure.p99Ms)}, max ${ms(figure.maxMs)}`,
        `  p99 beyond the interval: ${ms(figure.beyondMs)} (target < ${TARGET_BEYOND_INTERVAL_MS} ms) ${met ? 'OK' : 'MISSED'}`,
        '',
      ].join('\n'),
    );
  } catch (error) {
    process.stderr.write(`${logTail(service)}\n`);
    throw error;
  } finally {
    await stopService(service);
    removeWorkDir(service);
  }
}

module.exports = { cibaApprovalToPoll, CIBA_SERVICE_ENV };

if (require.main === module) {
  main().catch((error) => {
    process.stderr.write(`${error.stack ?? error}\n`);
    process.exit(1);
  });
}
