import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** A value sealed with AES-256-GCM: the key id it was sealed with, and `iv (12) || tag (16) || ciphertext`. */
export interface SealedValue {
  keyId: string;
  sealed: Buffer;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** The keyring does not hold the key a value was sealed with (it was removed from DATA_ENCRYPTION_KEYS). */
export class UnknownKeyError extends Error {
  constructor(readonly keyId: string) {
    super(`No key "${keyId}" in DATA_ENCRYPTION_KEYS.`);
    this.name = 'UnknownKeyError';
  }
}

/** The value does not authenticate under its key and context (corrupted, or copied from another row). */
export class UnreadableValueError extends Error {
  constructor(readonly keyId: string) {
    super(`A value sealed with key "${keyId}" does not authenticate.`);
    this.name = 'UnreadableValueError';
  }
}

/**
 * Secrets stored at rest (DECISIONS 10: connection strings) are sealed with AES-256-GCM under the
 * keyring DATA_ENCRYPTION_KEYS: the first key seals, every key opens, so a new key is put first and
 * the old one kept until every value has been re-sealed. A random 96-bit IV per value (NIST SP
 * 800-38D 8.2.2) and an associated context (which row the value belongs to), so that a sealed value
 * copied into another row or tenant does not open there. Messages never contain the plain value.
 */
export class DataCipher {
  private readonly keys: Map<string, Buffer>;
  readonly currentKeyId: string;

  constructor(keyring: { id: string; key: Buffer }[]) {
    if (keyring.length === 0) throw new Error('DATA_ENCRYPTION_KEYS holds no key.');
    for (const { id, key } of keyring) {
      if (key.length !== 32) throw new Error(`DATA_ENCRYPTION_KEYS key "${id}" is not 32 bytes.`);
    }
    this.keys = new Map(keyring.map(({ id, key }) => [id, key]));
    this.currentKeyId = keyring[0].id;
  }

  seal(plaintext: string, context: string): SealedValue {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.currentKeyId)!, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return { keyId: this.currentKeyId, sealed: Buffer.concat([iv, cipher.getAuthTag(), ciphertext]) };
  }

  open(value: SealedValue, context: string): string {
    const key = this.keys.get(value.keyId);
    if (!key) throw new UnknownKeyError(value.keyId);
    if (value.sealed.length < IV_BYTES + TAG_BYTES) throw new UnreadableValueError(value.keyId);
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, value.sealed.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(value.sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(value.sealed.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      throw new UnreadableValueError(value.keyId);
    }
  }

  /** True when the value was sealed with an older key and should be re-sealed with the current one. */
  isStale(value: SealedValue): boolean {
    return value.keyId !== this.currentKeyId;
  }
}
