#!/usr/bin/env node
'use strict';
// `npm run bench:login`: people signing in (issue 23; DECISIONS 14, 15), measured in one run:
// 1. authorization-code exchanges per second (grant_type=authorization_code, a confidential client
//    with client_secret_post: code consumed in the database, PKCE checked, the person's access token
//    and id_token signed in the HSM) against client_credentials tokens per second, both driven the
//    same way (BENCH_CONNECTIONS requests in flight from this process) one after the other, over
//    BENCH_ROUNDS alternating rounds; target: exchanges >= 0.8x client_credentials.
// 2. the latency of a password + TOTP sign-in at the hosted login page (GET the form, POST the
//    password, POST the one-time code), p50 and p99, with 1 and with 20 people at once; target with
//    one: p50 at most the password hash's own cost (scrypt with the service's parameters, timed here)
//    plus 50 ms. With 20, client_credentials tokens are requested beside the sign-ins; target: their
//    rate stays within 1.5x of their rate alone (rate alone / rate beside <= 1.5).
// 3. a flood of wrong passwords (the password grant, BENCH_FLOOD_CONNECTIONS in flight from each of
//    BENCH_FLOOD_ADDRESSES addresses, X-Forwarded-For through TRUSTED_PROXIES) beside one right sign-in
//    at a time from another address: the right sign-in's p50 with and without the flood (issue 32).
//    The flood runs under raised lockout limits, so that it keeps hashing while it lasts: it measures
//    how the hashing turns are shared, not the lockout (which refuses an address past its limit before
//    the hash: test/password-flood). BENCH_PHASES (exchange,sign-in,flood) picks the parts to run.
// Each person is a cardholder with an OATH TOTP credential issued through SyncSession, as the tests do.
// A one-time code is accepted once, so every sign-in uses a person's unused time step.
const { createHash, randomBytes, randomUUID, scrypt } = require('node:crypto');
const { existsSync } = require('node:fs');
const os = require('node:os');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');
const { setTimeout: sleep } = require('node:timers/promises');
const { URL, URLSearchParams } = require('node:url');
const { ROOT, ensureDependencies, ensureDebianPackages, build } = require('../setup');
const { startService, waitReady, stopService, removeWorkDir, connectDatabase } = require('./service');
const { setUpPlatform } = require('./platform');
const { startCpuMeasurement } = require('./cpu');
/* global fetch */

const ROUNDS = Number(process.env.BENCH_ROUNDS || 5);
const DURATION_S = Number(process.env.BENCH_DURATION_S || 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS || 20);
const SOLO_SIGN_INS = Number(process.env.BENCH_SOLO_SIGN_INS || 30);
const CROWD = 20;
const CROWD_ROUNDS = Number(process.env.BENCH_CROWD_ROUNDS || 2);
const PHASES = new Set((process.env.BENCH_PHASES || 'exchange,sign-in,flood').split(','));
const FLOOD_ADDRESSES = Number(process.env.BENCH_FLOOD_ADDRESSES || 2);
const FLOOD_CONNECTIONS = Number(process.env.BENCH_FLOOD_CONNECTIONS || 8);
const FLOOD_SIGN_INS = Number(process.env.BENCH_FLOOD_SIGN_INS || 15);
const PASSWORD = 'correct horse battery staple';
const REDIRECT = 'https://app.example.test/cb';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const APPLICATION_HEADERS = { 'application-id': 'com.example.bench', 'application-version': '1.0' };
const progress = (message) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${message}\n`);
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
};

// The shared node_modules of a worktree must not be reinstalled over: install only where there is none.
if (!existsSync(join(ROOT, 'node_modules'))) ensureDependencies();
ensureDebianPackages([{ name: 'softhsm2', binary: 'softhsm2-util' }]);
build();
// Built just above: the bench computes one-time codes as the person's authenticator would, with the service's HOTP.
const { base32Decode, hotp } = require('../../dist/libs/credential-management/src/credentials/totp');

async function call(baseUrl, method, path, { token, json, scim, form } = {}) {
  const headers = { ...APPLICATION_HEADERS };
  let body;
  if (token) headers.authorization = `Bearer ${token}`;
  if (json) [headers['content-type'], body] = ['application/json', JSON.stringify(json)];
  if (scim) [headers['content-type'], body] = ['application/scim+json', JSON.stringify(scim)];
  if (form) [headers['content-type'], body] = ['application/x-www-form-urlencoded', new URLSearchParams(form).toString()];
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

async function expectStatus(what, status, promise) {
  const response = await promise;
  if (response.status !== status) throw new Error(`${what} failed: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

/** RFC 6238 TOTP (HMAC-SHA1, 6 digits, 30 s) of a base32 secret for time step `step`: the person's authenticator, with the service's own HOTP. */
const totpCode = (secret, step) => hotp(base32Decode(secret), step, 6);

/** Cardholders with a password and an OATH TOTP credential issued through the real flow (content request, second approver, SyncSession). */
async function createPeople(ctx, db, count) {
  const { baseUrl, org, adminToken } = ctx;
  const policy = await expectStatus(
    'device policy',
    201,
    call(baseUrl, 'POST', `/admin/v1/organizations/${org}/device-policies`, {
      token: adminToken,
      json: { name: 'Bench OTP card', credentialTypes: ['OATH_TOTP'] },
    }),
  );
  const issuer = await expectStatus(
    'issuer',
    201,
    call(baseUrl, 'POST', `/admin/v1/organizations/${org}/system-accounts`, { token: adminToken, json: { role: 'Issuance' } }),
  );
  const approver = await expectStatus(
    'approver',
    201,
    call(baseUrl, 'POST', `/admin/v1/organizations/${org}/system-accounts`, { token: adminToken, json: { role: 'Issuance' } }),
  );
  const issuerToken = await ctx.tokenFor(issuer.clientId, issuer.secret.value);
  const approverToken = await ctx.tokenFor(approver.clientId, approver.secret.value);
  const people = [];
  for (let i = 0; i < count; i++) {
    const userName = `person${i}`;
    const user = await expectStatus(
      `user ${userName}`,
      201,
      call(baseUrl, 'POST', `/admin/v1/organizations/${org}/users`, { token: adminToken, json: { userName, role: 'Cardholder', password: PASSWORD } }),
    );
    const [{ id: wallet }] = (await db.query('SELECT id FROM wallets WHERE owner_user_id = $1', [user.id])).rows;
    const device = { id: randomUUID(), ATR: '3B8F8001', CUID: `${process.pid}${String(i).padStart(6, '0')}` };
    await db.query(
      "INSERT INTO devices (id, org_id, status, reason, owner_user_id, created_at, updated_at) VALUES ($1, $2, 'AVAILABLE', 'NONE', NULL, now(), now())",
      [device.id, org],
    );
    await db.query('INSERT INTO device_external_ids (device_id, org_id, position, atr, cuid) VALUES ($1, $2, 1, $3, $4)', [
      device.id,
      org,
      device.ATR,
      device.CUID,
    ]);
    const request = await expectStatus(
      'content request',
      201,
      call(baseUrl, 'POST', '/aims/rs/scim/v2/ContentRequest', {
        token: issuerToken,
        scim: {
          schemas: ['urn:vendor:scim:api:cms:1.0:ContentRequest'],
          type: 'issuance',
          target: { device: { value: device.id }, devicePolicy: { value: policy.id } },
          wallet: { value: wallet },
        },
      }),
    );
    await expectStatus('approve', 200, call(baseUrl, 'POST', `/aims/rs/scim/v2/ContentRequest/${request.id}/approve`, { token: approverToken, scim: {} }));
    const session = await expectStatus(
      'sync session',
      201,
      call(baseUrl, 'POST', '/aims/rs/scim/v2/SyncSession', {
        token: issuerToken,
        scim: {
          schemas: ['urn:vendor:scim:api:cms:1.0:SyncSession'],
          contentRequest: { value: request.id },
          device: { ATR: device.ATR, CUID: device.CUID },
          results: [{ operation: 'WRITE_OTP', status: 'SUCCESS', credentialType: 'OATH_TOTP' }],
        },
      }),
    );
    people.push({ userName, totpSecret: session.credentials.find((c) => c.type === 'OATH_TOTP').secret, lastStep: -1 });
  }
  return people;
}

function cookiePair(response, name) {
  const found = response.headers.getSetCookie().find((c) => c.startsWith(`${name}=`));
  return found?.split(';')[0];
}

function hiddenField(html, name) {
  return new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1].replace(/&amp;/g, '&');
}

/**
 * One sign-in as a browser does it: GET the form, POST the password, POST the one-time code (the
 * person's first unused time step, now or the next one: one step of drift). Answers the session
 * cookie, the milliseconds it took, and how often the page said it was busy (Retry-After) and was asked again.
 */
async function signIn(ctx, person, returnTo) {
  const started = performance.now();
  const login = `${ctx.baseUrl}/authentication/customer/${ctx.org}/login`;
  const origin = new URL(ctx.baseUrl).origin;
  const query = returnTo ? `?return_to=${encodeURIComponent(returnTo)}` : '';
  let busy = 0;
  for (;;) {
    const form = await fetch(`${login}${query}`);
    const html = await form.text();
    const formCookie = cookiePair(form, '__Host-Http-login-form');
    const post = (fields) =>
      fetch(login, {
        method: 'POST',
        redirect: 'manual',
        headers: { ...FORM, cookie: formCookie, origin, 'sec-fetch-site': 'same-origin' },
        body: new URLSearchParams({ form_token: hiddenField(html, 'form_token'), ...(returnTo ? { return_to: returnTo } : {}), ...fields }).toString(),
      });
    const password = await post({ step: 'password', userName: person.userName, password: PASSWORD });
    const passwordPage = await password.text();
    // A busy service answers the form again with Retry-After (DECISIONS 14: a page, not an error status).
    if (password.headers.has('retry-after')) {
      busy += 1;
      await sleep(50);
      continue;
    }
    const stepToken = hiddenField(passwordPage, 'step_token');
    if (!stepToken) throw new Error(`sign-in of ${person.userName}: the password step answered ${password.status}`);
    const now = Math.floor(Date.now() / 30_000);
    const step = person.lastStep < now ? now : person.lastStep + 1;
    if (step > now + 1) throw new Error(`${person.userName} has no unused time step left; create more people`);
    person.lastStep = step;
    const code = await post({ step: 'code', step_token: stepToken, code: totpCode(person.totpSecret, step) });
    await code.text();
    const cookie = cookiePair(code, '__Host-Http-session');
    if (!cookie) throw new Error(`sign-in of ${person.userName}: the code step answered ${code.status}`);
    return { cookie, ms: performance.now() - started, busy };
  }
}

/**
 * `concurrency` loops each taking the next request from `next()` until it answers undefined or time
 * is up; answers the rate, and with `servicePid` the service's CPU per request (Node + PostgreSQL,
 * steadier than the rate on a shared host: ops/bench/cpu.js).
 */
async function drive(concurrency, seconds, next, servicePid) {
  const deadline = performance.now() + seconds * 1000;
  let done = 0;
  const started = performance.now();
  const cpu = servicePid ? startCpuMeasurement(servicePid) : undefined;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const request = next();
        if (!request) return;
        const response = await fetch(request.url, request.init);
        const body = await response.text();
        if (response.status !== 200) throw new Error(`${request.url} answered ${response.status} ${body.slice(0, 300)}`);
        done += 1;
      }
    }),
  );
  const rate = done / ((performance.now() - started) / 1000);
  if (!cpu) return rate;
  const { serviceUs, databaseUs } = cpu(done);
  return { rate, nodeUs: serviceUs ?? 0, databaseUs: databaseUs ?? 0 };
}

/** Authorization codes for `client`, each with its verifier, from the person's session (the authorization endpoint as a browser would call it). */
async function makeCodes(ctx, client, cookie, count) {
  const codes = [];
  const batch = 20;
  for (let i = 0; i < count; i += batch) {
    const made = await Promise.all(
      Array.from({ length: Math.min(batch, count - i) }, async () => {
        const verifier = randomBytes(32).toString('base64url');
        const query = new URLSearchParams({
          response_type: 'code',
          client_id: client.clientId,
          redirect_uri: REDIRECT,
          scope: 'openid',
          code_challenge: createHash('sha256').update(verifier).digest('base64url'),
          code_challenge_method: 'S256',
          nonce: randomBytes(8).toString('hex'),
        });
        const response = await fetch(`${ctx.baseUrl}/authentication/customer/${ctx.org}/authorize?${query}`, { redirect: 'manual', headers: { cookie } });
        const code = new URL(response.headers.get('location')).searchParams.get('code');
        if (!code) throw new Error(`authorize answered ${response.status} ${response.headers.get('location')}`);
        return { code, verifier };
      }),
    );
    codes.push(...made);
  }
  return codes;
}

/** scrypt with the service's parameters (libs/accounts PasswordHasher: N=2^15, r=8, p=1), timed here: the hash's own cost. */
async function passwordHashMs() {
  const times = [];
  for (let i = 0; i < 7; i++) {
    const started = performance.now();
    await new Promise((resolve, reject) =>
      scrypt(PASSWORD, randomBytes(16), 32, { N: 32768, r: 8, p: 1, maxmem: 64 * 1024 * 1024 }, (error) => (error ? reject(error) : resolve())),
    );
    times.push(performance.now() - started);
  }
  return median(times);
}

/**
 * Wrong passwords at the password grant from `addresses` addresses (X-Forwarded-For), `connections` in
 * flight from each, until `stop()`: answers the count of each status the flood got.
 */
function startFlood(ctx, addresses, connections) {
  const tokenUrl = `${ctx.baseUrl}/authentication/customer/${ctx.org}/token`;
  const statuses = {};
  let stopped = false;
  const loops = [];
  for (let a = 0; a < addresses; a++) {
    const address = `198.51.100.${a + 1}`;
    for (let c = 0; c < connections; c++) {
      loops.push(
        (async () => {
          for (let i = 0; !stopped; i++) {
            const body = new URLSearchParams({ grant_type: 'password', username: `guess${c}x${i}`, password: `wrong password ${i}` }).toString();
            const response = await fetch(tokenUrl, { method: 'POST', headers: { ...FORM, 'x-forwarded-for': address }, body });
            await response.text();
            statuses[response.status] = (statuses[response.status] ?? 0) + 1;
            // A refusal at once (429, 503) is retried after a breath, as a guessing script would.
            if (response.status !== 400) await sleep(20);
          }
        })(),
      );
    }
  }
  return {
    stop: async () => {
      stopped = true;
      await Promise.all(loops);
      return statuses;
    },
  };
}

async function main() {
  // The password hashing and lockout settings, when set, reach the service (to compare them in one
  // place); the flood runs under lockout limits too high to stop it, and trusts the bench's X-Forwarded-For.
  const flood = PHASES.has('flood')
    ? { AUTH_FAILURE_LIMIT: '100000', PASSWORD_FAILURE_BUDGET: '10000000', TRUSTED_PROXIES: '127.0.0.1,::1,::ffff:127.0.0.1' }
    : {};
  const extraEnv = {
    ...flood,
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('PASSWORD_HASH_') || name.startsWith('AUTH_FAILURE_'))),
  };
  const service = await startService({ logLevel: process.env.LOG_LEVEL || 'warn', extraEnv });
  let db;
  try {
    await waitReady(service);
    const ctx = await setUpPlatform(service);
    db = await connectDatabase(service);
    const tokenUrl = `${ctx.baseUrl}/authentication/customer/${ctx.org}/token`;
    const credentialsBody = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: ctx.account.clientId,
      client_secret: ctx.account.secret,
    }).toString();
    const credentialsRequest = () => ({ url: tokenUrl, init: { method: 'POST', headers: FORM, body: credentialsBody } });

    const web = await expectStatus(
      'client',
      201,
      call(ctx.baseUrl, 'POST', `/admin/v1/organizations/${ctx.org}/system-accounts`, { token: ctx.adminToken, json: { role: 'Cardholder' } }),
    );
    const webClient = { clientId: web.clientId, secret: web.secret.value };
    await expectStatus(
      'oidc client',
      200,
      call(ctx.baseUrl, 'PUT', `/admin/v1/organizations/${ctx.org}/system-accounts/${web.clientId}/oidc-client`, {
        token: ctx.adminToken,
        json: { redirectUris: [REDIRECT], firstParty: true },
      }),
    );
    const peopleCount = 1 + (PHASES.has('sign-in') ? SOLO_SIGN_INS + CROWD * CROWD_ROUNDS : 0) + (PHASES.has('flood') ? 2 * FLOOD_SIGN_INS : 0);
    progress(`creating ${peopleCount} people with an OATH TOTP card`);
    const people = await createPeople(ctx, db, peopleCount);
    const [codeHolder, ...signers] = people;
    const { cookie } = await signIn(ctx, codeHolder);
    let next = 0;

    // 1. Code exchanges against client_credentials, alternating rounds.
    const exchangeRates = [];
    const credentialRates = [];
    for (let round = 1; PHASES.has('exchange') && round <= ROUNDS; round++) {
      const codes = await makeCodes(ctx, webClient, cookie, Math.ceil(DURATION_S * 2500));
      let index = 0;
      const exchangeRequest = () => {
        const next = codes[index++];
        if (!next) return undefined;
        const body = new URLSearchParams({
          grant_type: 'authorization_code',
          code: next.code,
          redirect_uri: REDIRECT,
          code_verifier: next.verifier,
          client_id: webClient.clientId,
          client_secret: webClient.secret,
        }).toString();
        return { url: tokenUrl, init: { method: 'POST', headers: FORM, body } };
      };
      // Making the codes is a burst of writes: let the database settle, warm up, then measure both
      // sides, the one measured first alternating from round to round (the codes live 60 s).
      await sleep(2000);
      await drive(CONNECTIONS, 1, credentialsRequest);
      const sides = [
        async () => credentialRates.push(await drive(CONNECTIONS, DURATION_S, credentialsRequest, service.child.pid)),
        async () => exchangeRates.push(await drive(CONNECTIONS, DURATION_S, exchangeRequest, service.child.pid)),
      ];
      if (round % 2 === 0) sides.reverse();
      for (const side of sides) await side();
      if (index >= codes.length) progress('  (the codes ran out before the time: raise the count in makeCodes)');
      const [e, c] = [exchangeRates.at(-1), credentialRates.at(-1)];
      progress(
        `round ${round}: ${Math.round(e.rate)} code exchanges/s (CPU ${Math.round(e.nodeUs)} + ${Math.round(e.databaseUs)} us), ` +
          `${Math.round(c.rate)} client_credentials tokens/s (CPU ${Math.round(c.nodeUs)} + ${Math.round(c.databaseUs)} us)`,
      );
    }

    console.log(
      `\nMachine: ${os.cpus().length} cores, node ${process.version}, load average ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}; ${ROUNDS} alternating rounds of ${DURATION_S} s, ${CONNECTIONS} requests in flight (medians)\n`,
    );
    const hashMs = await passwordHashMs();
    console.log(`password hash alone (scrypt N=2^15): ${Math.round(hashMs)} ms`);
    if (PHASES.has('exchange')) {
      const exchange = median(exchangeRates.map((r) => r.rate));
      const credentials = median(credentialRates.map((r) => r.rate));
      const cpuOf = (runs) => median(runs.map((r) => r.nodeUs + r.databaseUs));
      const cpuText = (runs) => `${Math.round(median(runs.map((r) => r.nodeUs)))} + ${Math.round(median(runs.map((r) => r.databaseUs)))} us`;
      console.log(`authorization_code exchanges:       ${Math.round(exchange)} /s  CPU ${cpuText(exchangeRates)} per exchange (Node + PostgreSQL)`);
      console.log(`client_credentials tokens:          ${Math.round(credentials)} /s  CPU ${cpuText(credentialRates)} per token`);
      console.log(
        `exchanges / client_credentials:     ${(exchange / credentials).toFixed(2)}x by rate (target >= 0.8x), ${(cpuOf(credentialRates) / cpuOf(exchangeRates)).toFixed(2)}x by CPU per request\n`,
      );
    }

    // 3. A flood of wrong passwords from few addresses beside one right sign-in at a time from another.
    if (PHASES.has('flood')) {
      const quiet = [];
      for (let i = 0; i < FLOOD_SIGN_INS; i++) quiet.push((await signIn(ctx, signers[next++])).ms);
      progress(`without the flood: p50 ${Math.round(median(quiet))} ms`);
      const running = startFlood(ctx, FLOOD_ADDRESSES, FLOOD_CONNECTIONS);
      await sleep(2000);
      const flooded = [];
      let floodBusy = 0;
      for (let i = 0; i < FLOOD_SIGN_INS; i++) {
        const r = await signIn(ctx, signers[next++]);
        flooded.push(r.ms);
        floodBusy += r.busy;
      }
      const statuses = await running.stop();
      progress(`with the flood: p50 ${Math.round(median(flooded))} ms`);
      console.log(
        `right sign-in (password + TOTP), no flood:  p50 ${Math.round(median(quiet))} ms  p99 ${Math.round(percentile(quiet, 99))} ms  (${quiet.length} sign-ins)`,
      );
      console.log(
        `right sign-in beside ${FLOOD_ADDRESSES}x${FLOOD_CONNECTIONS} wrong passwords in flight: p50 ${Math.round(median(flooded))} ms  p99 ${Math.round(
          percentile(flooded, 99),
        )} ms  (${flooded.length} sign-ins, ${floodBusy} busy answers asked again; the flood got ${JSON.stringify(statuses)})\n`,
      );
    }
    if (!PHASES.has('sign-in')) return;

    // 2. Sign-ins: one person at a time, then 20 at once beside client_credentials tokens.
    const solo = [];
    for (let i = 0; i < SOLO_SIGN_INS; i++) solo.push((await signIn(ctx, signers[next++])).ms);
    progress(`one person at a time: p50 ${Math.round(median(solo))} ms over ${solo.length} sign-ins (scrypt alone ${Math.round(hashMs)} ms)`);

    const aloneRate = await drive(CONNECTIONS, DURATION_S, credentialsRequest);
    const crowd = [];
    let busy = 0;
    let crowdDone = false;
    const crowdRun = (async () => {
      try {
        for (let round = 0; round < CROWD_ROUNDS; round++) {
          const results = await Promise.all(Array.from({ length: CROWD }, () => signIn(ctx, signers[next++])));
          for (const r of results) {
            crowd.push(r.ms);
            busy += r.busy;
          }
        }
      } finally {
        crowdDone = true;
      }
    })();
    // Awaited below, after the tokens beside it; until then a failed sign-in must not end the bench as
    // an unhandled rejection, which would skip stopping the service (it was left running once).
    crowdRun.catch(() => undefined);
    const besideStarted = performance.now();
    let besideCount = 0;
    // Tokens requested beside the sign-ins, for as long as they last.
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (!crowdDone) {
          const request = credentialsRequest();
          const response = await fetch(request.url, request.init);
          await response.text();
          if (response.status !== 200) throw new Error(`client_credentials beside the sign-ins answered ${response.status}`);
          besideCount += 1;
        }
      }),
    );
    await crowdRun;
    const besideRate = besideCount / ((performance.now() - besideStarted) / 1000);

    console.log(
      `sign-in (password + TOTP), 1 person:  p50 ${Math.round(median(solo))} ms  p99 ${Math.round(percentile(solo, 99))} ms  (${solo.length} sign-ins; target p50 <= ${Math.round(hashMs + 50)} ms)`,
    );
    console.log(
      `sign-in (password + TOTP), 20 people: p50 ${Math.round(median(crowd))} ms  p99 ${Math.round(percentile(crowd, 99))} ms  (${crowd.length} sign-ins, ${busy} busy answers asked again)`,
    );
    console.log(`client_credentials alone:           ${Math.round(aloneRate)} /s`);
    console.log(`client_credentials beside 20 people: ${Math.round(besideRate)} /s  (alone / beside ${(aloneRate / besideRate).toFixed(2)}x, target <= 1.5x)`);
  } finally {
    await db?.end();
    await stopService(service);
    removeWorkDir(service);
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
