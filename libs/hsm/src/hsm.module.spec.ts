import { Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { HsmConfigurationError, SignerUnavailableError } from './hsm.errors';
import { HsmModule, type HsmModuleOptions } from './hsm.module';
import { KeyStore } from './key-store.port';
import { Pkcs11KeyStore } from './pkcs11-key-store.adapter';
import { Pkcs11Signer } from './pkcs11-signer.adapter';
import { Signer } from './signer.port';
import { createTemporarySoftHsmToken, type TemporarySoftHsmToken } from './testing/temporary-softhsm-token';
import { verifiesJws } from './testing/verify-jws';

const HSM_SETTINGS = 'HSM_SETTINGS';
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };
let token: TemporarySoftHsmToken;
let settings: HsmModuleOptions;

/** Stands in for the configuration module: the factory's dependencies come through `imports` and `inject`. */
@Module({ providers: [{ provide: HSM_SETTINGS, useFactory: () => settings }], exports: [HSM_SETTINGS] })
class SettingsModule {}

beforeAll(() => {
  token = createTemporarySoftHsmToken('module-spec');
  token.generateKey('JWT_KEY', 'EC');
  settings = { modulePath: token.modulePath, tokenLabel: token.tokenLabel, pin: token.pin, logger: silent };
});

afterAll(() => token.remove());

function compile() {
  return Test.createTestingModule({
    imports: [HsmModule.forRootAsync({ imports: [SettingsModule], inject: [HSM_SETTINGS], useFactory: (hsm: HsmModuleOptions) => hsm })],
  }).compile();
}

it('provides a connected Signer and KeyStore on one HSM owner, and closes it at application shutdown', async () => {
  const app = await compile();
  const signer = app.get(Signer);
  const keyStore = app.get(KeyStore);
  const input = Buffer.from('eyJhbGciOiJFUzI1NiJ9.e30');

  expect(signer).toBeInstanceOf(Pkcs11Signer);
  expect(keyStore).toBeInstanceOf(Pkcs11KeyStore);
  expect(signer.isReady()).toBe(true);
  expect(verifiesJws(signer.publicJwk, input, await signer.sign(input))).toBe(true);
  const pair = await keyStore.generateKeyPair('CA_KEY/module-spec', 'EC-P256');
  expect(await keyStore.sign(pair.label, input, { hash: 'SHA-256', encoding: 'raw' })).toHaveLength(64);

  await app.close();
  expect(signer.isReady()).toBe(false);
  await expect(signer.sign(input)).rejects.toBeInstanceOf(SignerUnavailableError);
  await expect(keyStore.sign(pair.label, input, { hash: 'SHA-256', encoding: 'raw' })).rejects.toBeInstanceOf(SignerUnavailableError);
});

it('refuses to start when the HSM configuration is wrong', async () => {
  settings = { ...settings, keyLabel: 'MISSING' };
  await expect(compile()).rejects.toBeInstanceOf(HsmConfigurationError);
});
