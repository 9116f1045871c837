import { calculateJwkThumbprint } from 'jose';
import { HsmConfigurationError, SignerUnavailableError } from './hsm.errors';
import type { HsmLogger } from './hsm.logger';
import { Pkcs11Hsm, type HsmOptions } from './pkcs11-hsm';
import { Pkcs11Signer } from './pkcs11-signer.adapter';
import { provisionSoftHsmToken } from './softhsm-provisioning';
import { simulateModuleFailure } from './testing/module-failure';
import { createTemporarySoftHsmToken, type TemporarySoftHsmToken } from './testing/temporary-softhsm-token';
import { verifiesJws, waitUntil } from './testing/verify-jws';

/** The Signer port on a freshly connected owner; `close()` closes the owner. */
async function connectSigner(options: HsmOptions, logger?: HsmLogger): Promise<Pkcs11Signer & { owner: Pkcs11Hsm; close(): Promise<void> }> {
  const hsm = await Pkcs11Hsm.connect(options, logger);
  return Object.assign(new Pkcs11Signer(hsm), { owner: hsm, close: () => hsm.close() });
}

const signingInput = Buffer.from('eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJjbGllbnQtMSJ9');
let token: TemporarySoftHsmToken;
let options: HsmOptions;

beforeAll(() => {
  token = createTemporarySoftHsmToken('adapter-spec');
  // Made before the first C_Initialize of this process: SoftHSM reads the token folder only then (rule 8).
  token.generateKey('RSA_KEY', 'RSA');
  token.generateUncopyableEcKey('UNCOPYABLE_KEY');
  token.generateKey('IDLE_KEY', 'EC');
  options = { modulePath: token.modulePath, tokenLabel: token.tokenLabel, pin: token.pin };
});

afterAll(() => token.remove());

describe('ES256 with the key the embedded default provisions on first start', () => {
  let signer: Awaited<ReturnType<typeof connectSigner>>;
  let firstKid: string;

  beforeAll(async () => {
    // Before this process's first C_Initialize: SoftHSM reads the token folder only then (rule 8).
    provisionSoftHsmToken({ ...token.options, keyLabel: 'JWT_KEY' });
    signer = await connectSigner({ ...options, keyLabel: 'JWT_KEY' });
    firstKid = signer.kid;
  });

  afterAll(() => signer.close());

  it('publishes the P-256 public key only, with the RFC 7638 thumbprint as kid', async () => {
    const jwk = signer.publicJwk;
    expect(signer.algorithm).toBe('ES256');
    expect(Object.keys(jwk).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
    expect(jwk).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig', kid: signer.kid });
    expect(Buffer.from(jwk.x ?? '', 'base64url')).toHaveLength(32);
    expect(Buffer.from(jwk.y ?? '', 'base64url')).toHaveLength(32);
    expect(signer.kid).toBe(await calculateJwkThumbprint({ kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y }, 'sha256'));
  });

  it('signs with a raw 64-byte r||s signature that node:crypto verifies', async () => {
    const signature = await signer.sign(signingInput);
    expect(signature).toHaveLength(64);
    expect(verifiesJws(signer.publicJwk, signingInput, signature)).toBe(true);
    expect(verifiesJws(signer.publicJwk, Buffer.from(`${signingInput.toString()}x`), signature)).toBe(false);
    expect(signer.isReady()).toBe(true);
  });

  it('signs 40 inputs asked for in one turn of the event loop, sent to the sign thread together, each answer its own', async () => {
    const inputs = Array.from({ length: 40 }, (_, index) => Buffer.from(`eyJhbGciOiJFUzI1NiJ9.${index}`));
    const signatures = await Promise.all(inputs.map((input) => signer.sign(input)));
    signatures.forEach((signature, index) => {
      expect(verifiesJws(signer.publicJwk, inputs[index]!, signature)).toBe(true);
      // A reply matched to the wrong sign would verify for its neighbour's input instead.
      expect(verifiesJws(signer.publicJwk, inputs[(index + 1) % inputs.length]!, signature)).toBe(false);
    });
  });

  it('refuses a second PKCS#11 owner in the same process (rule 4)', async () => {
    await expect(Pkcs11Hsm.connect(options)).rejects.toMatchObject({ code: 'HSM_MODULE_IN_USE' });
    expect(() => provisionSoftHsmToken({ ...token.options, keyLabel: 'JWT_KEY' })).toThrow(/already owned in this process/);
    expect(await signer.sign(signingInput)).toHaveLength(64);
  });

  it('after a module failure: the failing sign is unavailable, readiness goes red, then it reconnects by itself', async () => {
    simulateModuleFailure(signer.owner);

    const failed: unknown = await signer.sign(signingInput).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(SignerUnavailableError);
    expect(signer.isReady()).toBe(false);
    const whileReconnecting: unknown = await signer.sign(signingInput).catch((error: unknown) => error);
    expect(whileReconnecting).toBeInstanceOf(SignerUnavailableError);
    expect((whileReconnecting as SignerUnavailableError).retryAfterSeconds).toBeGreaterThanOrEqual(1);

    await waitUntil(() => signer.isReady(), 5_000);
    const signature = await signer.sign(signingInput);
    expect(signer.kid).toBe(firstKid);
    expect(verifiesJws(signer.publicJwk, signingInput, signature)).toBe(true);
  });

  it('reconnects after the module lost its state, initializing it again', async () => {
    simulateModuleFailure(signer.owner, 'module-finalized');

    await expect(signer.sign(signingInput)).rejects.toBeInstanceOf(SignerUnavailableError);
    expect(signer.isReady()).toBe(false);
    await waitUntil(() => signer.isReady(), 5_000);
    expect(verifiesJws(signer.publicJwk, signingInput, await signer.sign(signingInput))).toBe(true);
  });

  it('connects again after close() and C_Finalize; provisioning again finds the key instead of making another', async () => {
    await signer.close();
    provisionSoftHsmToken({ ...token.options, keyLabel: 'JWT_KEY' });

    // The label must match exactly one private key (rule 6): only one was made.
    signer = await connectSigner({ ...options, keyLabel: 'JWT_KEY' });
    expect(signer.kid).toBe(firstKid);
    expect(verifiesJws(signer.publicJwk, signingInput, await signer.sign(signingInput))).toBe(true);
  });
});

describe('RS256 with an RSA-2048 key under another label', () => {
  let signer: Awaited<ReturnType<typeof connectSigner>>;

  beforeAll(async () => {
    signer = await connectSigner({ ...options, keyLabel: 'RSA_KEY', sessionPoolSize: 4 });
  });

  afterAll(() => signer.close());

  it('publishes n and e only, with the RFC 7638 thumbprint as kid', async () => {
    const jwk = signer.publicJwk;
    expect(signer.algorithm).toBe('RS256');
    expect(Object.keys(jwk).sort()).toEqual(['alg', 'e', 'kid', 'kty', 'n', 'use']);
    expect(jwk).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig', e: 'AQAB' });
    expect(Buffer.from(jwk.n ?? '', 'base64url')).toHaveLength(256);
    expect(signer.kid).toBe(await calculateJwkThumbprint({ kty: 'RSA', n: jwk.n, e: jwk.e }, 'sha256'));
  });

  it('signs 50 inputs at once over the session pool, every signature verifying', async () => {
    const inputs = Array.from({ length: 50 }, (_, index) => Buffer.from(`eyJhbGciOiJSUzI1NiJ9.${index}`));
    const signatures = await Promise.all(inputs.map((input) => signer.sign(input)));
    signatures.forEach((signature, index) => {
      expect(signature).toHaveLength(256);
      expect(verifiesJws(signer.publicJwk, inputs[index] ?? Buffer.alloc(0), signature)).toBe(true);
    });
  });

  it('after a module failure with signs queued for sessions: all are unavailable, then it recovers', async () => {
    simulateModuleFailure(signer.owner);

    const results = await Promise.allSettled(Array.from({ length: 10 }, () => signer.sign(signingInput)));
    expect(results.map((result) => result.status === 'rejected' && result.reason instanceof SignerUnavailableError)).toEqual(
      Array.from({ length: 10 }, () => true),
    );
    expect(signer.isReady()).toBe(false);

    await waitUntil(() => signer.isReady(), 5_000);
    const signatures = await Promise.all(Array.from({ length: 8 }, () => signer.sign(signingInput)));
    expect(signatures.every((signature) => verifiesJws(signer.publicJwk, signingInput, signature))).toBe(true);
  });

  it('close() lets the signs in flight finish before finalizing, then refuses new ones', async () => {
    const order: string[] = [];
    const inputs = Array.from({ length: 20 }, (_, index) => Buffer.from(`in-flight.${index}`));
    const signing = inputs.map((input) => signer.sign(input).finally(() => order.push('sign')));

    const closing = signer.close().then(() => order.push('closed'));
    await expect(signer.sign(signingInput)).rejects.toBeInstanceOf(SignerUnavailableError);
    const signatures = await Promise.all(signing);
    await closing;

    expect(order).toEqual([...inputs.map(() => 'sign'), 'closed']);
    signatures.forEach((signature, index) => expect(verifiesJws(signer.publicJwk, inputs[index] ?? Buffer.alloc(0), signature)).toBe(true));
    expect(signer.isReady()).toBe(false);
    await expect(signer.close()).resolves.toBeUndefined();
  });
});

it('a refused configuration leaves the module free for a corrected one', async () => {
  await expect(Pkcs11Hsm.connect({ ...options, keyLabel: 'NO_SUCH_KEY' })).rejects.toBeInstanceOf(HsmConfigurationError);
  const signer = await connectSigner({ ...options, keyLabel: 'RSA_KEY' });
  expect(verifiesJws(signer.publicJwk, signingInput, await signer.sign(signingInput))).toBe(true);
  await signer.close();
});

describe('the key a sign uses', () => {
  function connectLogged(keyLabel: string) {
    const infos: Array<Record<string, unknown>> = [];
    const logger = {
      info: (fields: object | string, message?: string) => infos.push({ ...(typeof fields === 'object' ? fields : {}), message: message ?? fields }),
      warn: () => undefined,
      error: () => undefined,
    };
    return { infos, connecting: connectSigner({ ...options, keyLabel }, logger) };
  }

  it('is a session copy of the token key when the HSM allows one, rebuilt after a reconnect', async () => {
    const { infos, connecting } = connectLogged('RSA_KEY');
    const signer = await connecting;
    try {
      expect(infos.find((info) => info.message === 'HSM signer connected')).toMatchObject({ keyLabel: 'RSA_KEY', signsWithSessionCopy: true });
      expect(infos.some((info) => info.message === 'HSM refused a session copy of the signing key; signing with the token object')).toBe(false);

      simulateModuleFailure(signer.owner);
      await expect(signer.sign(signingInput)).rejects.toBeInstanceOf(SignerUnavailableError);
      await waitUntil(() => signer.isReady(), 5_000);
      expect(verifiesJws(signer.publicJwk, signingInput, await signer.sign(signingInput))).toBe(true);
    } finally {
      await signer.close();
    }
  });

  it('is the token object when the key is not copyable (CKA_COPYABLE false), saying so in the log', async () => {
    const { infos, connecting } = connectLogged('UNCOPYABLE_KEY');
    const signer = await connecting;
    try {
      expect(infos.find((info) => info.message === 'HSM refused a session copy of the signing key; signing with the token object')).toMatchObject({
        keyLabel: 'UNCOPYABLE_KEY',
        reason: expect.stringContaining('CKR_ACTION_PROHIBITED') as unknown,
      });
      expect(infos.find((info) => info.message === 'HSM signer connected')).toMatchObject({ algorithm: 'ES256', signsWithSessionCopy: false });
      expect(verifiesJws(signer.publicJwk, signingInput, await signer.sign(signingInput))).toBe(true);
    } finally {
      await signer.close();
    }
  });
});

describe('health checks while idle', () => {
  it('a probe sign notices a lost HSM with no caller signing: readiness red, a warning, then the reconnect', async () => {
    const warnings: string[] = [];
    const logger = { info: () => undefined, warn: (_fields: object | string, message?: string) => warnings.push(message ?? ''), error: () => undefined };
    const signer = await connectSigner({ ...options, keyLabel: 'IDLE_KEY', healthCheckIntervalMs: 50 }, logger);
    try {
      // ES256 signs are synchronous, so no probe is ever in flight while this runs (rule 2).
      simulateModuleFailure(signer.owner);
      await waitUntil(() => !signer.isReady(), 2_000);
      expect(warnings).toContain('HSM sign failed; reconnecting in the background');
      await waitUntil(() => signer.isReady(), 5_000);
      expect(verifiesJws(signer.publicJwk, signingInput, await signer.sign(signingInput))).toBe(true);
    } finally {
      await signer.close();
    }
  });

  it('without health checks (the default), nothing notices until a sign fails', async () => {
    const signer = await connectSigner({ ...options, keyLabel: 'IDLE_KEY' });
    try {
      simulateModuleFailure(signer.owner);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(signer.isReady()).toBe(true);
      await expect(signer.sign(signingInput)).rejects.toBeInstanceOf(SignerUnavailableError);
      expect(signer.isReady()).toBe(false);
      await waitUntil(() => signer.isReady(), 5_000);
    } finally {
      await signer.close();
    }
  });
});

it('stops reconnecting for good when the HSM rejects the PIN (rule 5), logging an error without the PIN', async () => {
  const errors: unknown[] = [];
  const logger = { info: () => undefined, warn: () => undefined, error: (fields: object | string) => errors.push(fields) };
  const signer = await connectSigner({ ...options, keyLabel: 'RSA_KEY' }, logger);
  try {
    // SoftHSM reads the PIN from disk at C_Initialize, so the module must lose its state for the
    // reconnect to meet the new PIN.
    token.pkcs11Tool('--change-pin', '--new-pin', '11112222');
    simulateModuleFailure(signer.owner, 'module-finalized');

    await expect(signer.sign(signingInput)).rejects.toBeInstanceOf(SignerUnavailableError);
    await waitUntil(() => errors.length > 0, 5_000);
    expect(JSON.stringify(errors)).toContain('CKR_PIN_INCORRECT');
    expect(JSON.stringify(errors)).not.toContain(token.pin);
    expect(signer.isReady()).toBe(false);
    const refused: unknown = await signer.sign(signingInput).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SignerUnavailableError);
    expect((refused as Error).message).toContain('rejected the PIN');
  } finally {
    await signer.close();
  }
});
