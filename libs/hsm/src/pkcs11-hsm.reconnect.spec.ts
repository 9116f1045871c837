import { SignerUnavailableError } from './hsm.errors';
import { Pkcs11Hsm } from './pkcs11-hsm';
import { Pkcs11KeyStore } from './pkcs11-key-store.adapter';
import { takeSoftHsmTokenAway } from './testing/module-failure';
import { createTemporarySoftHsmToken, type TemporarySoftHsmToken } from './testing/temporary-softhsm-token';
import { waitUntil } from './testing/verify-jws';

// Recovery cadence: while the token is away, probe for it every second without logging in; log in
// as soon as it is back, however long it was away (the login backoff is for failed logins only).
let token: TemporarySoftHsmToken;

beforeAll(() => {
  token = createTemporarySoftHsmToken('reconnect-spec');
  token.generateKey('JWT_KEY', 'EC');
});

afterAll(() => token.remove());

it('after a long outage, signs again within about a second of the token coming back, with every key', async () => {
  const warnings: string[] = [];
  const infos: string[] = [];
  const logger = {
    info: (_fields: object | string, message?: string) => infos.push(message ?? ''),
    warn: (_fields: object | string, message?: string) => warnings.push(message ?? ''),
    error: () => undefined,
  };
  const hsm = await Pkcs11Hsm.connect({ modulePath: token.modulePath, tokenLabel: token.tokenLabel, pin: token.pin }, logger);
  const keyStore = new Pkcs11KeyStore(hsm);
  try {
    const ca = await keyStore.generateKeyPair('CA_KEY/reconnect', 'EC-P256');
    const away = takeSoftHsmTokenAway(hsm, token.tokenDirectory, token.tokenFolder());

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

    away.restore();
    const restoredAt = Date.now();
    await waitUntil(() => hsm.isReady(), 3_000);
    expect(Date.now() - restoredAt).toBeLessThan(1_500);
    expect(infos).toContain('HSM token reachable again; logging in');
    expect(await hsm.signJws(Buffer.from('a.b'))).toHaveLength(64);
    expect(await keyStore.sign(ca.label, Buffer.from('m'), { hash: 'SHA-256', encoding: 'raw' })).toHaveLength(64);
  } finally {
    await hsm.close();
  }
}, 20_000);
