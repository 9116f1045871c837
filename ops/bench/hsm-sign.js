#!/usr/bin/env node
'use strict';
// `npm run bench:hsm`: what one ES256 sign through pkcs11js and SoftHSM2 costs, with the token's
// private key object and with a session copy of it (C_CopyObject, CKA_TOKEN false), which is what
// the signer adapter signs with when the HSM allows it. A fresh token in a temporary folder; the
// signs run synchronously on this thread, as the adapter runs ES256 signs. Prints the median of
// BENCH_ROUNDS (5) rounds of BENCH_SIGNS (20000) signs each.
const { Buffer } = require('node:buffer');
const { createHash } = require('node:crypto');
const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { ROOT, ensureDependencies, ensureDebianPackages, build } = require('../setup');

const rounds = Number(process.env.BENCH_ROUNDS || 5);
const signsPerRound = Number(process.env.BENCH_SIGNS || 20000);

ensureDependencies();
ensureDebianPackages([
  { name: 'softhsm2', binary: 'softhsm2-util' },
  { name: 'opensc', binary: 'pkcs11-tool' },
]);
build();
// The project's own provisioning, as the embedded default and the tests use it. It sets
// SOFTHSM2_CONF, which SoftHSM reads at C_Initialize, so it runs before pkcs11js loads the module.
const { ensureSoftHsmToken, generateSoftHsmKey } = require(join(ROOT, 'dist/libs/hsm/src/softhsm-provisioning'));
const folder = mkdtempSync(join(tmpdir(), 'hsm-bench-'));
const token = { directory: folder, tokenLabel: 'bench', soPin: '12345678', pin: '87654321' };
const { modulePath } = ensureSoftHsmToken(token);
generateSoftHsmKey({ ...token, keyLabel: 'JWT_KEY', keyType: 'EC' });

const pkcs11js = require('pkcs11js');
const pkcs11 = new pkcs11js.PKCS11();
pkcs11.load(modulePath);
pkcs11.C_Initialize({ flags: pkcs11js.CKF_OS_LOCKING_OK });
try {
  const [slot] = pkcs11.C_GetSlotList(true);
  const session = pkcs11.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION);
  pkcs11.C_Login(session, pkcs11js.CKU_USER, token.pin);
  pkcs11.C_FindObjectsInit(session, [{ type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_PRIVATE_KEY }]);
  const [privateKey] = pkcs11.C_FindObjects(session, 1);
  pkcs11.C_FindObjectsFinal(session);
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
    console.log(
      `  ${key.padEnd(13)} ${us.toFixed(1).padStart(6)} us/sign  ${Math.round(1e6 / us)
        .toLocaleString('en-US')
        .padStart(7)} signs/s`,
    );
  }
  pkcs11.C_Logout(session);
  pkcs11.C_CloseAllSessions(slot);
} finally {
  pkcs11.C_Finalize();
  rmSync(folder, { recursive: true, force: true });
}
