import { Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { HsmConfigurationError, SignerUnavailableError } from './hsm.errors';
import { HsmModule, type HsmModuleOptions } from './hsm.module';
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
  settings = { modulePath: token.modulePath, tokenLabel: token.tokenLabel, pin: token.pin, generateKeyIfMissing: true, logger: silent };
});

afterAll(() => token.remove());

function compile() {
  return Test.createTestingModule({
    imports: [HsmModule.forRootAsync({ imports: [SettingsModule], inject: [HSM_SETTINGS], useFactory: (hsm: HsmModuleOptions) => hsm })],
  }).compile();
}

it('provides a connected Signer and closes it at application shutdown', async () => {
  const app = await compile();
  const signer = app.get(Signer);
  const input = Buffer.from('eyJhbGciOiJFUzI1NiJ9.e30');

  expect(signer).toBeInstanceOf(Pkcs11Signer);
  expect(signer.isReady()).toBe(true);
  expect(verifiesJws(signer.publicJwk, input, await signer.sign(input))).toBe(true);

  await app.close();
  expect(signer.isReady()).toBe(false);
  await expect(signer.sign(input)).rejects.toBeInstanceOf(SignerUnavailableError);
});

it('refuses to start when the HSM configuration is wrong', async () => {
  settings = { ...settings, keyLabel: 'MISSING', generateKeyIfMissing: false };
  await expect(compile()).rejects.toBeInstanceOf(HsmConfigurationError);
});
