import { SignerUnavailableError } from './hsm.errors';
import { Pkcs11Hsm } from './pkcs11-hsm';
import { Pkcs11KeyStore } from './pkcs11-key-store.adapter';
import { simulateModuleFailure, takeSoftHsmTokenAway } from './testing/module-failure';
import { buildSlowFailingModule } from './testing/slow-failing-module';
import { createTemporarySoftHsmToken, type TemporarySoftHsmToken } from './testing/temporary-softhsm-token';
import { waitUntil } from './testing/verify-jws';

// Recovery cadence: while the token is away, probe for it every second without logging in; log in
// as soon as it is back, however long it was away (the login backoff is for failed logins only).
// Every attempt is reported to `onReconnectAttempt` (the service counts it in hsm_reconnect_attempts_total).
let token: TemporarySoftHsmToken;

beforeAll(() => {
  token = createTemporarySoftHsmToken('reconnect-spec');
  token.generateKey('JWT_KEY', 'EC');
});

afterAll(() => token.remove());

/** A timer due every 10 ms; `stop()` ends it and says how late (ms) it ran at worst: how long the event loop was held. */
function watchEventLoop(): { stop(): number } {
  let worstLagMs = 0;
  let last = Date.now();
  const ticks = setInterval(() => {
    const now = Date.now();
    worstLagMs = Math.max(worstLagMs, now - last - 10);
    last = now;
  }, 10);
  // A test that fails before stop() must not leave it holding the worker.
  ticks.unref();
  return {
    stop: () => {
      clearInterval(ticks);
      return worstLagMs;
    },
  };
}

it('after a long outage, signs again within about a second of the token coming back, with every key', async () => {
  const warnings: string[] = [];
  const infos: string[] = [];
  const logger = {
    info: (_fields: object | string, message?: string) => infos.push(message ?? ''),
    warn: (_fields: object | string, message?: string) => warnings.push(message ?? ''),
    error: () => undefined,
  };
  const attempts: string[] = [];
  const options = {
    modulePath: token.modulePath,
    tokenLabel: token.tokenLabel,
    pin: token.pin,
    onReconnectAttempt: (outcome: string) => attempts.push(outcome),
  };
  const hsm = await Pkcs11Hsm.connect(options, logger);
  const keyStore = new Pkcs11KeyStore(hsm);
  let away: { restore(): void } | undefined;
  try {
    const ca = await keyStore.generateKeyPair('CA_KEY/reconnect', 'EC-P256');
    away = takeSoftHsmTokenAway(hsm, token.tokenDirectory, token.tokenFolder());

    await expect(hsm.signJws(Buffer.from('a.b'))).rejects.toBeInstanceOf(SignerUnavailableError);
    expect(hsm.isReady()).toBe(false);
    // Six seconds away: past several steps of the old login backoff (0.25, 0.75, 1.75, 3.75 s...).
    const outageEndsAt = Date.now() + 6_000;
    while (Date.now() < outageEndsAt) {
      const refused: unknown = await keyStore.sign(ca.label, Buffer.from('m'), { hash: 'SHA-256', encoding: 'der' }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(SignerUnavailableError);
      expect((refused as SignerUnavailableError).retryAfterSeconds).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    // Probes, not logins: one warning when the token went, no failed reconnect attempts.
    expect(warnings.filter((warning) => warning === 'HSM token not reachable; probing until it is back')).toHaveLength(1);
    expect(warnings).not.toContain('HSM reconnect failed');
    // Once a second (the old loop probed back to back, hundreds of times a second).
    expect(attempts.length).toBeGreaterThanOrEqual(4);
    expect(attempts.length).toBeLessThanOrEqual(8);
    expect(new Set(attempts)).toEqual(new Set(['token-absent']));

    away.restore();
    const restoredAt = Date.now();
    await waitUntil(() => hsm.isReady(), 3_000);
    expect(Date.now() - restoredAt).toBeLessThan(1_500);
    expect(infos).toContain('HSM token reachable again; logging in');
    expect(attempts.at(-1)).toBe('reconnected');
    expect(await hsm.signJws(Buffer.from('a.b'))).toHaveLength(64);
    expect(await keyStore.sign(ca.label, Buffer.from('m'), { hash: 'SHA-256', encoding: 'raw' })).toHaveLength(64);
  } finally {
    away?.restore();
    await hsm.close();
  }
}, 20_000);

it('a module whose failing calls block: the event loop stays free and the module is tried once a second', async () => {
  const slowModule = buildSlowFailingModule();
  const attempts: string[] = [];
  const options = {
    modulePath: slowModule.modulePath,
    tokenLabel: token.tokenLabel,
    pin: token.pin,
    onReconnectAttempt: (outcome: string) => attempts.push(outcome),
  };
  const hsm = await Pkcs11Hsm.connect(options);
  try {
    // The HSM becomes unreachable: its client library now blocks 200 ms in each call, then fails.
    slowModule.failSlowly(200);
    simulateModuleFailure(hsm, 'module-finalized');
    await expect(hsm.signJws(Buffer.from('a.b'))).rejects.toBeInstanceOf(SignerUnavailableError);

    // A timer due every 10 ms must never wait long: nothing may block the event loop.
    const lag = watchEventLoop();
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    expect(lag.stop()).toBeLessThan(100);
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    expect(attempts.length).toBeLessThanOrEqual(6);
    expect(hsm.isReady()).toBe(false);

    slowModule.recover();
    await waitUntil(() => hsm.isReady(), 3_000);
    expect(attempts.at(-1)).toBe('reconnected');
    expect(await hsm.signJws(Buffer.from('a.b'))).toHaveLength(64);
  } finally {
    slowModule.recover();
    await hsm.close();
    slowModule.remove();
  }
}, 20_000);

it('a DES3 encryption (a card administration key) whose module calls block does not hold the event loop, and encrypts the same once healed', async () => {
  const slowModule = buildSlowFailingModule();
  const hsm = await Pkcs11Hsm.connect({ modulePath: slowModule.modulePath, tokenLabel: token.tokenLabel, pin: token.pin });
  const keyStore = new Pkcs11KeyStore(hsm);
  const block = Buffer.from('0011223344556677', 'hex');
  try {
    const healthy = await keyStore.encryptDes3('CARD_ADMIN_MASTER_KEY', block);
    expect(healthy).toHaveLength(8);

    // The HSM becomes unreachable while the service is healthy: C_EncryptInit now blocks 1 s, then fails.
    slowModule.failSlowly(1_000);
    const lag = watchEventLoop();
    const started = Date.now();
    await expect(keyStore.encryptDes3('CARD_ADMIN_MASTER_KEY', block)).rejects.toBeInstanceOf(SignerUnavailableError);
    // A loop held until now would show in the first tick after it.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const worstLagMs = lag.stop();
    // The failing call did block, for its second, on the sign thread; a timer due every 10 ms never waited long.
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(slowModule.failedCalls('C_EncryptInit')).toBe(1);
    expect(worstLagMs).toBeLessThan(100);
    expect(hsm.isReady()).toBe(false);

    slowModule.recover();
    await waitUntil(() => hsm.isReady(), 3_000);
    expect(await keyStore.encryptDes3('CARD_ADMIN_MASTER_KEY', block)).toEqual(healthy);
  } finally {
    slowModule.recover();
    await hsm.close();
    slowModule.remove();
  }
}, 20_000);
