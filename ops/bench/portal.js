#!/usr/bin/env node
'use strict';
// `npm run bench:portal`: the management portal (issue 24; DECISIONS 17) on this machine.
//   first-load JS      gzip size of the JavaScript index.html loads                    target < 300 kB
//   list interactive   navigation to /portal/{org}/system-accounts until its table     target < 1.5 s
//                      shows the accounts, in Debian's headless Chromium, signed in
//   user search        the desk's query (POST /Users/.search, userName sw "<typed>",    p99 < 200 ms
//                      sorted, 25 a page) with the session cookie, as one types, in an
//                      organization of BENCH_USERS (100,000) users
//   desk issuance      from the click on "Issue card <CUID>" in the desk's issue dialog    p50 < 1.5 s
//                      until the request's page shows "Awaiting encoding" (a policy that
//                      needs no approval), BENCH_ISSUES (10) runs after one warm-up, each
//                      for another user and card, in one signed-in browser page
// The built service runs as a child process on its embedded defaults; users are seeded with SQL, and
// so is the administrator's browser session (a row as the login page writes it: the bench measures
// the portal, not the sign-in, which `npm run bench:login` measures).
const { createHash, randomBytes, randomUUID } = require('node:crypto');
const { existsSync, readFileSync } = require('node:fs');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');
const { gzipSync } = require('node:zlib');
const { ROOT, ensureDependencies, ensurePortalDependencies, ensureDebianPackages, build, buildPortal } = require('../setup');
const { startService, waitReady, stopService, removeWorkDir, connectDatabase } = require('./service');
const { setUpPlatform } = require('./platform');
/* global fetch */

const USERS = Number(process.env.BENCH_USERS || 100_000);
const SEARCHES = Number(process.env.BENCH_SEARCHES || 400);
const LOADS = Number(process.env.BENCH_LOADS || 10);
const ISSUES = Number(process.env.BENCH_ISSUES || 10);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium-headless-shell';
const APPLICATION = { 'Application-ID': 'com.credential-platform.portal', 'Application-Version': '1.0' };
const progress = (message) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${message}\n`);
const percentile = (values, p) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))];
const ms = (value) => `${value.toFixed(1)} ms`;

// Installed dependencies are used as they are (a worktree may share them); a fresh clone installs them.
if (!existsSync(join(ROOT, 'node_modules'))) ensureDependencies();
if (!existsSync(join(ROOT, 'portal', 'node_modules'))) ensurePortalDependencies();
ensureDebianPackages([
  { name: 'softhsm2', binary: 'softhsm2-util' },
  { name: 'chromium-headless-shell', binary: 'chromium-headless-shell' },
]);
build();
buildPortal();

/** The JavaScript the first load fetches: index.html's module script and its preloads, gzip-compressed as the service sends them. */
function firstLoadJavaScript() {
  const dist = join(ROOT, 'portal', 'dist');
  const index = readFileSync(join(dist, 'index.html'), 'utf8');
  const files = [...index.matchAll(/(?:src|href)="\/portal\/([^"]+\.js)"/g)].map((match) => match[1]);
  const bytes = files.reduce((sum, file) => sum + gzipSync(readFileSync(join(dist, file)), { level: 9 }).length, 0);
  return { files, kB: bytes / 1000 };
}

async function seedUsers(db, org) {
  progress(`seeding ${USERS.toLocaleString('en')} users...`);
  await db.query(
    `INSERT INTO users (id, org_id, user_name, user_type, role, display_name, created_at, updated_at)
     SELECT gen_random_uuid(), $1, 'user' || lpad(i::text, 6, '0'), 'cardholder', 'Cardholder', 'User ' || i, now(), now()
       FROM generate_series(1, $2) AS i`,
    [org, USERS],
  );
  await db.query(
    `INSERT INTO wallets (id, org_id, owner_user_id, created_at, updated_at) SELECT gen_random_uuid(), org_id, id, now(), now() FROM users u
      WHERE org_id = $1 AND NOT EXISTS (SELECT 1 FROM wallets w WHERE w.owner_user_id = u.id)`,
    [org],
  );
  await db.query('ANALYZE');
}

/** An organization administrator with a live browser session; answers the session cookie's value. */
async function administratorSession(platform, db) {
  const created = await fetch(`${platform.baseUrl}/admin/v1/organizations/${platform.org}/users`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${platform.adminToken}`, 'Content-Type': 'application/json', ...APPLICATION },
    body: JSON.stringify({ userName: 'bench.admin', role: 'Administration', userType: 'operator', organizationAdministrator: true }),
  });
  if (created.status !== 201) throw new Error(`create the administrator: ${created.status} ${await created.text()}`);
  const { id } = await created.json();
  const value = randomBytes(32).toString('base64url');
  await db.query(
    `INSERT INTO sign_in_sessions (id, org_id, user_id, secret_hash, amr, auth_time, created_at, last_seen_at, idle_expires_at, absolute_expires_at)
     VALUES ($1, $2, $3, $4, ARRAY['pwd', 'otp'], now(), now(), now(), now() + interval '1 hour', now() + interval '8 hours')`,
    [randomUUID(), platform.org, id, createHash('sha256').update(value, 'utf8').digest()],
  );
  return value;
}

/** Navigation to an interactive system-accounts list, LOADS times, each in a fresh browser context (cold cache). */
async function listLoads(baseUrl, org, cookie) {
  const { chromium } = require('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM });
  const times = [];
  try {
    for (let i = 0; i < LOADS + 1; i += 1) {
      // The session cookie on every request, as the browser sends it after the login page set it.
      const context = await browser.newContext({ extraHTTPHeaders: { Cookie: `__Host-Http-session=${cookie}` } });
      const page = await context.newPage();
      const started = performance.now();
      await page.goto(`${baseUrl}/portal/${org}/system-accounts`);
      await page
        .getByRole('link', { name: /^bench-/ })
        .first()
        .waitFor();
      const elapsed = performance.now() - started;
      if (i > 0) times.push(elapsed); // the first load warms the service's code paths
      await context.close();
    }
  } finally {
    await browser.close();
  }
  return times;
}

/** Cards in stock for the issuance runs (the bulk import's rows, written directly) and a device policy that needs no approval. */
async function seedIssuance(platform, db) {
  const cards = [];
  for (let i = 0; i <= ISSUES; i += 1) {
    const id = randomUUID();
    const cuid = `9100${String(i).padStart(6, '0')}`;
    await db.query("INSERT INTO devices (id, org_id, status, reason, created_at, updated_at) VALUES ($1, $2, 'AVAILABLE', 'NONE', now(), now())", [
      id,
      platform.org,
    ]);
    await db.query("INSERT INTO device_external_ids (device_id, org_id, position, atr, cuid) VALUES ($1, $2, 1, '3B8F8001', $3)", [id, platform.org, cuid]);
    cards.push(cuid);
  }
  const policy = await fetch(`${platform.baseUrl}/admin/v1/organizations/${platform.org}/device-policies`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${platform.adminToken}`, 'Content-Type': 'application/json', ...APPLICATION },
    body: JSON.stringify({ name: 'Bench card', credentialTypes: ['OATH_TOTP'], requiresApproval: false }),
  });
  if (policy.status !== 201) throw new Error(`create the device policy: ${policy.status} ${await policy.text()}`);
  return cards;
}

/**
 * The desk's issuance as an operator does it, one signed-in page: find the user, "Issue a device",
 * the card by its CUID, the policy; the clock runs from the click on "Issue card <CUID>" until the
 * request's page says "Awaiting encoding" (the request filed, the page loaded and its status read).
 */
async function deskIssuances(baseUrl, org, cookie, cards) {
  const { chromium } = require('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM });
  const times = [];
  try {
    const context = await browser.newContext({ extraHTTPHeaders: { Cookie: `__Host-Http-session=${cookie}` } });
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    for (let i = 0; i < cards.length; i += 1) {
      const user = `user${String(i + 1).padStart(6, '0')}`;
      await page.goto(`${baseUrl}/portal/${org}/desk`);
      await page.getByLabel('Find a user').fill(user);
      await page.getByRole('button', { name: user, exact: true }).click();
      await page.getByRole('button', { name: 'Issue a device' }).click();
      const dialog = page.getByRole('dialog', { name: `Issue a device to ${user}` });
      await dialog.getByLabel('Card in stock').fill(cards[i]);
      await dialog.getByRole('radio', { name: `Card ${cards[i]}` }).check();
      await dialog.getByRole('combobox', { name: 'Device policy' }).click();
      await page.getByRole('option', { name: 'Bench card' }).click();
      const issue = dialog.getByRole('button', { name: `Issue card ${cards[i]}` });
      await issue.waitFor();
      const started = performance.now();
      await issue.click();
      await page.getByRole('region', { name: 'Request' }).getByRole('status').getByText('Awaiting encoding').waitFor();
      const elapsed = performance.now() - started;
      if (i > 0) times.push(elapsed); // the first run loads the request page's code and warms the service
      if (process.env.BENCH_VERBOSE) progress(`issue ${cards[i]} ${ms(elapsed)}`);
    }
    await context.close();
  } finally {
    await browser.close();
  }
  return times;
}

/** The desk's search as a person types: a prefix per keystroke, one request after another. */
async function userSearches(baseUrl, cookie) {
  const times = [];
  for (let i = 0; i < SEARCHES; i += 1) {
    const digits = String(1 + ((i * 7919) % USERS)).padStart(6, '0');
    const typed = `user${digits.slice(0, 1 + (i % 6))}`;
    const started = performance.now();
    const response = await fetch(`${baseUrl}/aims/rs/scim/v2/Users/.search`, {
      method: 'POST',
      headers: { Cookie: `__Host-Http-session=${cookie}`, Origin: baseUrl, 'Content-Type': 'application/json', ...APPLICATION },
      body: JSON.stringify({
        schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'],
        filter: `userName sw ${JSON.stringify(typed)}`,
        sortBy: 'userName',
        startIndex: 1,
        count: 25,
      }),
    });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`search answered ${response.status}`);
    times.push(performance.now() - started);
    if (process.env.BENCH_VERBOSE) progress(`${typed} ${ms(times[times.length - 1])}`);
  }
  return times;
}

async function main() {
  const js = firstLoadJavaScript();
  const service = await startService({ logLevel: 'warn' });
  try {
    await waitReady(service);
    const platform = await setUpPlatform(service);
    const db = await connectDatabase(service);
    let cookie;
    let cards;
    try {
      await seedUsers(db, platform.org);
      cookie = await administratorSession(platform, db);
      cards = await seedIssuance(platform, db);
    } finally {
      await db.end();
    }
    progress('loading the system-accounts list in the browser...');
    const loads = await listLoads(service.baseUrl, platform.org, cookie);
    progress('searching users as one types...');
    const searches = await userSearches(service.baseUrl, cookie);
    progress('issuing from the desk in the browser...');
    const issues = await deskIssuances(service.baseUrl, platform.org, cookie, cards);
    const lines = [
      `first-load JS        ${js.kB.toFixed(1)} kB gzip (${js.files.join(', ')})   target < 300 kB`,
      `list interactive     p50 ${ms(percentile(loads, 50))}, max ${ms(Math.max(...loads))} over ${loads.length} cold loads   target < 1500 ms`,
      `user search          p50 ${ms(percentile(searches, 50))}, p99 ${ms(percentile(searches, 99))} over ${searches.length} searches, ${USERS.toLocaleString('en')} users   target p99 < 200 ms`,
      `desk issuance        p50 ${ms(percentile(issues, 50))}, max ${ms(Math.max(...issues))} over ${issues.length} runs, "Issue" to "Awaiting encoding"   target p50 < 1500 ms`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await stopService(service);
    removeWorkDir(service);
  }
}

main().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exit(1);
});
