import { webcrypto } from 'node:crypto';
import { traced } from '@app/observability';
import { createHsmCrypto, hsmPrivateKey, webCryptoAlgorithm } from './hsm-web-crypto';
import { KeyStore, type HsmKeyPair, type KeyAlgorithm, type SignOptions } from './key-store.port';
import { Pkcs11Hsm, type HeldKeyPair } from './pkcs11-hsm';
import { ecdsaDerSignature } from './pkcs11-signing';

/**
 * The `KeyStore` port on the process's PKCS#11 owner. Key pairs are generated in the token and
 * found by label there, so every service process sees the keys any of them made; each process
 * holds a session copy of the keys it signs with (see Pkcs11Hsm).
 */
export class Pkcs11KeyStore extends KeyStore {
  override readonly crypto: webcrypto.Crypto;
  /** The WebCrypto view of each key pair, by label, for the CKA_ID it was built for. */
  private readonly pairs = new Map<string, { id: string; pair: Promise<HsmKeyPair> }>();

  constructor(private readonly hsm: Pkcs11Hsm) {
    super();
    this.crypto = createHsmCrypto(async (binding, data, hash) => (await hsm.sign(binding.label, data, hash, binding.id)).signature);
  }

  override async generateKeyPair(label: string, algorithm: KeyAlgorithm): Promise<HsmKeyPair> {
    return this.pairOf(await this.hsm.generateKeyPair(label, algorithm));
  }

  override async findKeyPair(label: string): Promise<HsmKeyPair | undefined> {
    const held = await traced('hsm.find', { 'hsm.key_label': label }, () => this.hsm.findKeyPair(label));
    return held === undefined ? undefined : this.pairOf(held);
  }

  override async destroyKeyPair(label: string): Promise<void> {
    this.pairs.delete(label);
    await this.hsm.destroyKeyPair(label);
  }

  override async sign(label: string, data: Buffer, options: SignOptions): Promise<Buffer> {
    const { signature, kty } = await traced('hsm.sign', { 'hsm.key_label': label }, () => this.hsm.sign(label, data, options.hash));
    return kty === 'EC' && options.encoding === 'der' ? ecdsaDerSignature(signature) : signature;
  }

  override encryptDes3(label: string, data: Buffer): Promise<Buffer> {
    return traced('hsm.encrypt', { 'hsm.key_label': label }, () => this.hsm.encryptDes3(label, data));
  }

  private pairOf(held: HeldKeyPair): Promise<HsmKeyPair> {
    const cached = this.pairs.get(held.label);
    if (cached?.id === held.id) return cached.pair;
    const pair = buildPair(held);
    this.pairs.set(held.label, { id: held.id, pair });
    pair.catch(() => this.pairs.delete(held.label));
    return pair;
  }
}

async function buildPair(held: HeldKeyPair): Promise<HsmKeyPair> {
  const publicKey = await webcrypto.subtle.importKey('spki', held.publicKeySpki, webCryptoAlgorithm(held.algorithm), true, ['verify']);
  return Object.freeze({
    label: held.label,
    id: held.id,
    algorithm: held.algorithm,
    publicKeySpki: held.publicKeySpki,
    privateKey: hsmPrivateKey({ label: held.label, id: held.id }, publicKey),
    publicKey,
  });
}
