import { createDecipheriv } from 'node:crypto';
import { DataCipher, UnknownKeyError, UnreadableValueError } from './data-cipher';

/** AES-256-GCM sealing of DECISIONS 10 with a rotatable keyring. */
describe('DataCipher', () => {
  const oldKey = { id: 'old', key: Buffer.alloc(32, 1) };
  const newKey = { id: 'new', key: Buffer.alloc(32, 2) };
  const secret = 'Endpoint=sb://hub.example.net/;SharedAccessKeyName=Full;SharedAccessKey=c2VjcmV0;';

  it('seals with the first key: iv (12) || tag (16) || ciphertext, standard AES-256-GCM with the context as AAD', () => {
    const cipher = new DataCipher([newKey, oldKey]);
    const value = cipher.seal(secret, 'gateway:acme:1');
    expect(value.keyId).toBe('new');
    expect(value.sealed).toHaveLength(12 + 16 + Buffer.byteLength(secret));
    expect(value.sealed.toString('latin1')).not.toContain('SharedAccessKey');
    const decipher = createDecipheriv('aes-256-gcm', newKey.key, value.sealed.subarray(0, 12));
    decipher.setAAD(Buffer.from('gateway:acme:1'));
    decipher.setAuthTag(value.sealed.subarray(12, 28));
    expect(Buffer.concat([decipher.update(value.sealed.subarray(28)), decipher.final()]).toString()).toBe(secret);
  });

  it('uses a fresh IV each time', () => {
    const cipher = new DataCipher([newKey]);
    const a = cipher.seal(secret, 'c');
    const b = cipher.seal(secret, 'c');
    expect(a.sealed.subarray(0, 12).equals(b.sealed.subarray(0, 12))).toBe(false);
    expect(cipher.open(a, 'c')).toBe(secret);
    expect(cipher.open(b, 'c')).toBe(secret);
  });

  it('opens values sealed with an older key of the ring, and says they are stale', () => {
    const before = new DataCipher([oldKey]).seal(secret, 'c');
    const rotated = new DataCipher([newKey, oldKey]);
    expect(rotated.open(before, 'c')).toBe(secret);
    expect(rotated.isStale(before)).toBe(true);
    expect(rotated.isStale(rotated.seal(secret, 'c'))).toBe(false);
  });

  it('refuses a key id the ring no longer holds, naming the key and never the value', () => {
    const before = new DataCipher([oldKey]).seal(secret, 'c');
    const error = (() => {
      try {
        new DataCipher([newKey]).open(before, 'c');
      } catch (e) {
        return e as Error;
      }
    })();
    expect(error).toBeInstanceOf(UnknownKeyError);
    expect(error!.message).toContain('"old"');
    expect(error!.message).not.toContain('SharedAccessKey');
  });

  it('refuses a value moved to another context, or altered', () => {
    const cipher = new DataCipher([newKey]);
    const value = cipher.seal(secret, 'gateway:acme:1');
    expect(() => cipher.open(value, 'gateway:evil:1')).toThrow(UnreadableValueError);
    const altered = Buffer.from(value.sealed);
    altered[altered.length - 1] ^= 1;
    expect(() => cipher.open({ keyId: 'new', sealed: altered }, 'gateway:acme:1')).toThrow(UnreadableValueError);
    expect(() => cipher.open({ keyId: 'new', sealed: Buffer.alloc(5) }, 'gateway:acme:1')).toThrow(UnreadableValueError);
  });

  it('refuses an empty keyring or a key of the wrong size', () => {
    expect(() => new DataCipher([])).toThrow(/no key/);
    expect(() => new DataCipher([{ id: 'short', key: Buffer.alloc(16) }])).toThrow(/"short" is not 32 bytes/);
  });
});
