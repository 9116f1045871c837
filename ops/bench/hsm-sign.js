#!/usr/bin/env node
'use strict';
// `npm run bench:hsm`: what one ES256 sign through pkcs11js and SoftHSM2 costs, with the token's
// private key object and with a session copy of it (C_CopyObject, CKA_TOKEN false), which is what
// the signer adapter signs with when the HSM allows it. A fresh token in a temporary folder; the
// signs run synchronously on this thread, as the adapter's sign thread runs ES256 signs. Prints the median of
// BENCH_ROUNDS (5) rounds of BENCH_SIGNS (20000) signs each.
// Then the same HSM through the service's own adapter (libs/hsm Pkcs11Hsm, one sign at a time
// unless it says otherwise): JWS signs with JWT_KEY, CA key signs per algorithm and encoding, a card
// administration key's DES3 encryption, and certificates issued by @peculiar/x509 over the key
// store's WebCrypto, each with the CPU time of this process (every thread, the sign thread
// included) per operation.
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
  pkcs11.close();
  rmSync(folder, { recursive: true, force: true });
}

benchAdapter().catch((error) => {
  console.error(error);
  process.exit(1);
});

async function benchAdapter() {
  require('reflect-metadata');
  const x509 = require('@peculiar/x509');
  const { webcrypto } = require('node:crypto');
  const { Pkcs11Hsm, Pkcs11KeyStore } = require(join(ROOT, 'dist/libs/hsm/src'));
  const { provisionSoftHsmToken } = require(join(ROOT, 'dist/libs/hsm/src/softhsm-provisioning'));
  const adapterFolder = mkdtempSync(join(tmpdir(), 'hsm-bench-'));
  const adapterToken = { directory: adapterFolder, tokenLabel: 'bench', soPin: '12345678', pin: '87654321', keyLabel: 'JWT_KEY' };
  provisionSoftHsmToken(adapterToken);
  const hsm = await Pkcs11Hsm.connect({ modulePath, tokenLabel: 'bench', pin: adapterToken.pin });
  try {
    const keyStore = new Pkcs11KeyStore(hsm);
    const data = Buffer.from('tbsCertificate stand-in of about a hundred bytes '.repeat(2));
    /** Runs `operation` `count` times, `concurrency` at a time; wall and CPU time per operation. */
    const measure = async (name, count, operation, concurrency = 1) => {
      await operation(); // warm-up
      const cpuBefore = process.cpuUsage();
      const started = process.hrtime.bigint();
      let next = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < count) {
            next += 1;
            await operation();
          }
        }),
      );
      const wallUs = Number(process.hrtime.bigint() - started) / 1000 / count;
      const cpu = process.cpuUsage(cpuBefore);
      const cpuUs = (cpu.user + cpu.system) / count;
      console.log(
        `  ${name.padEnd(44)} ${wallUs.toFixed(1).padStart(7)} us/op  ${Math.round(1e6 / wallUs)
          .toLocaleString('en-US')
          .padStart(7)} ops/s  ${cpuUs.toFixed(1).padStart(7)} us CPU/op`,
      );
    };
    console.log(`\nThrough the adapter (libs/hsm Pkcs11Hsm and Pkcs11KeyStore):`);
    await measure('JWS ES256, JWT_KEY (session copy)', signsPerRound, () => hsm.signJws(data));
    const keys = {};
    for (const algorithm of ['EC-P256', 'EC-P384', 'RSA-3072']) {
      keys[algorithm] = await keyStore.generateKeyPair(`CA_KEY/bench-${algorithm}`, algorithm);
    }
    await measure('CA EC-P256 SHA-256, der', signsPerRound, () => keyStore.sign('CA_KEY/bench-EC-P256', data, { hash: 'SHA-256', encoding: 'der' }));
    await measure('CA EC-P256 SHA-256, raw', signsPerRound, () => keyStore.sign('CA_KEY/bench-EC-P256', data, { hash: 'SHA-256', encoding: 'raw' }));
    await measure('CA EC-P384 SHA-384, der', 2000, () => keyStore.sign('CA_KEY/bench-EC-P384', data, { hash: 'SHA-384', encoding: 'der' }));
    await measure('CA EC-P384 SHA-384, der, 4 at a time', 2000, () => keyStore.sign('CA_KEY/bench-EC-P384', data, { hash: 'SHA-384', encoding: 'der' }), 4);
    await measure('CA RSA-3072 SHA-256', 500, () => keyStore.sign('CA_KEY/bench-RSA-3072', data, { hash: 'SHA-256', encoding: 'der' }));
    await measure('CA RSA-3072 SHA-256, 4 at a time', 500, () => keyStore.sign('CA_KEY/bench-RSA-3072', data, { hash: 'SHA-256', encoding: 'der' }), 4);
    // A card's administration key (DECISIONS 17.1): the token now holds JWT_KEY, the three CA key pairs and this key.
    const cardKey = () => keyStore.encryptDes3('CARD_ADMIN_MASTER_KEY', Buffer.alloc(24, 7));
    await measure('DES3 card key (24 bytes)', 5000, cardKey);
    await measure('DES3 card key (24 bytes), 16 at a time', 5000, cardKey, 16);
    const ca = keys['EC-P256'];
    const leafKeys = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
    let serial = 0;
    await measure('certificate (@peculiar/x509), CA EC-P256', 2000, () =>
      x509.X509CertificateGenerator.create(
        {
          serialNumber: (++serial).toString(16).padStart(16, '0'),
          subject: 'CN=user@example.com',
          issuer: 'CN=Bench CA',
          notBefore: new Date(),
          notAfter: new Date(Date.now() + 86_400_000),
          publicKey: leafKeys.publicKey,
          signingKey: ca.privateKey,
          signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
        },
        keyStore.crypto,
      ),
    );
  } finally {
    await hsm.close();
    rmSync(adapterFolder, { recursive: true, force: true });
  }
}
