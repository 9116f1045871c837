#!/usr/bin/env node
'use strict';
// `npm run bench:hsm`: what one ES256 sign through pkcs11js and SoftHSM2 costs, with the token's
// private key object and with a session copy of it (C_CopyObject, CKA_TOKEN false), which is what
// the signer adapter signs with when the HSM allows it. A fresh token in a temporary folder; the
// signs run synchronously on this thread, as the adapter runs ES256 signs. Prints the median of
// BENCH_ROUNDS (5) rounds of BENCH_SIGNS (20000) signs each.
const { Buffer } = require('node:buffer');
const { execFileSync } = require('node:child_process');
const { createHash, randomBytes } = require('node:crypto');
const { mkdtempSync, rmSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { ensureDebianPackages } = require('../setup');

const MODULE = '/usr/lib/softhsm/libsofthsm2.so';
const PIN = '87654321';
const P256 = Buffer.from('06082a8648ce3d030107', 'hex');
const rounds = Number(process.env.BENCH_ROUNDS || 5);
const signsPerRound = Number(process.env.BENCH_SIGNS || 20000);

ensureDebianPackages([{ name: 'softhsm2', binary: 'softhsm2-util' }]);
const folder = mkdtempSync(join(tmpdir(), 'hsm-bench-'));
const config = join(folder, 'softhsm2.conf');
writeFileSync(config, `directories.tokendir = ${folder}\nobjectstore.backend = file\nlog.level = ERROR\n`);
// SoftHSM reads SOFTHSM2_CONF at C_Initialize, so it is set before pkcs11js loads the module.
process.env.SOFTHSM2_CONF = config;
execFileSync('softhsm2-util', ['--init-token', '--free', '--label', 'bench', '--so-pin', '12345678', '--pin', PIN], { stdio: 'ignore' });

const pkcs11js = require('pkcs11js');
const pkcs11 = new pkcs11js.PKCS11();
pkcs11.load(MODULE);
pkcs11.C_Initialize({ flags: pkcs11js.CKF_OS_LOCKING_OK });
try {
  const [slot] = pkcs11.C_GetSlotList(true);
  const session = pkcs11.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION | pkcs11js.CKF_RW_SESSION);
  pkcs11.C_Login(session, pkcs11js.CKU_USER, PIN);
  const common = [
    { type: pkcs11js.CKA_TOKEN, value: true },
    { type: pkcs11js.CKA_LABEL, value: 'JWT_KEY' },
    { type: pkcs11js.CKA_ID, value: randomBytes(16) },
  ];
  const { privateKey } = pkcs11.C_GenerateKeyPair(
    session,
    { mechanism: pkcs11js.CKM_EC_KEY_PAIR_GEN },
    [...common, { type: pkcs11js.CKA_EC_PARAMS, value: P256 }, { type: pkcs11js.CKA_VERIFY, value: true }],
    [...common, { type: pkcs11js.CKA_PRIVATE, value: true }, { type: pkcs11js.CKA_SENSITIVE, value: true }, { type: pkcs11js.CKA_EXTRACTABLE, value: false }, { type: pkcs11js.CKA_SIGN, value: true }],
  );
  const sessionCopy = pkcs11.C_CopyObject(session, privateKey, [{ type: pkcs11js.CKA_TOKEN, value: false }]);

  const digest = createHash('sha256').update('header.payload').digest();
  const output = Buffer.alloc(64);
  const signMicroseconds = (key) => {
    const started = process.hrtime.bigint();
    for (let i = 0; i < signsPerRound; i += 1) {
      pkcs11.C_SignInit(session, { mechanism: pkcs11js.CKM_ECDSA }, key);
      pkcs11.C_Sign(session, digest, output);
    }
    return Number(process.hrtime.bigint() - started) / 1000 / signsPerRound;
  };
  const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

  const results = { 'token object': [], 'session copy': [] };
  signMicroseconds(privateKey); // warm-up
  for (let round = 0; round < rounds; round += 1) {
    results['token object'].push(signMicroseconds(privateKey));
    results['session copy'].push(signMicroseconds(sessionCopy));
  }
  console.log(`ES256 signs through pkcs11js + SoftHSM2, median of ${rounds} rounds of ${signsPerRound}:`);
  for (const [key, values] of Object.entries(results)) {
    const us = median(values);
    console.log(`  ${key.padEnd(13)} ${us.toFixed(1).padStart(6)} us/sign  ${Math.round(1e6 / us).toLocaleString('en-US').padStart(7)} signs/s`);
  }
  pkcs11.C_Logout(session);
  pkcs11.C_CloseAllSessions(slot);
} finally {
  pkcs11.C_Finalize();
  rmSync(folder, { recursive: true, force: true });
}
