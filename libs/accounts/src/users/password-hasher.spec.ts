import { scryptSync } from 'node:crypto';
import { DomainError } from '@app/common';
import type { AppConfig } from '@app/config';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, PasswordHashSlots, PasswordHasher } from './password-hasher';

/** The password hash of DECISIONS 3.5: scrypt, `scrypt$N$r$p$saltB64$hashB64`, constant-time verify. */
describe('PasswordHasher', () => {
  const hasher = new PasswordHasher(new PasswordHashSlots({ passwordHashConcurrency: 2, passwordHashQueue: 16 } as AppConfig));
  const password = 'correct horse battery staple';
  const FORMAT = /^scrypt\$32768\$8\$1\$([A-Za-z0-9+/]+={0,2})\$([A-Za-z0-9+/]+={0,2})$/;
  let stored: string;

  beforeAll(async () => {
    stored = await hasher.hash(password);
  });

  it('stores scrypt$N$r$p$salt$hash with N=32768, r=8, p=1, a 16-byte salt, and not the password', () => {
    const match = FORMAT.exec(stored);
    expect(match).not.toBeNull();
    expect(Buffer.from(match![1], 'base64')).toHaveLength(16);
    expect(Buffer.from(match![2], 'base64')).toHaveLength(32);
    expect(stored).not.toContain(password);
  });

  it('is scrypt itself: the stored hash is what node:crypto scrypt derives from the salt', () => {
    const [, salt, hash] = FORMAT.exec(stored)!;
    const derived = scryptSync(password, Buffer.from(salt, 'base64'), 32, { N: 32768, r: 8, p: 1, maxmem: 64 * 1024 * 1024 });
    expect(derived.toString('base64')).toBe(hash);
  });

  it('salts: the same password hashes differently each time, and both verify', async () => {
    const again = await hasher.hash(password);
    expect(again).not.toBe(stored);
    expect(await hasher.verify(password, again)).toBe(true);
  });

  it('verify is true for the password and false for any other', async () => {
    expect(await hasher.verify(password, stored)).toBe(true);
    expect(await hasher.verify('correct horse battery stapler', stored)).toBe(false);
    expect(await hasher.verify('Correct horse battery staple', stored)).toBe(false);
    expect(await hasher.verify('', stored)).toBe(false);
  });

  it('verify is false for a password outside the length rules, even against its own prefix', async () => {
    expect(await hasher.verify(password.slice(0, 11), stored)).toBe(false);
    expect(await hasher.verify('x'.repeat(MAX_PASSWORD_LENGTH + 1), stored)).toBe(false);
  });

  it('verify is false (not an exception) for a stored value that is not an scrypt hash', async () => {
    for (const bad of ['', password, 'scrypt$3$8$1$AAAA$AAAA', 'scrypt$1048576$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAA==', 'bcrypt$2b$10$abc']) {
      expect(await hasher.verify(password, bad)).toBe(false);
    }
  });

  it('reads the cost from the stored string, so older or stronger parameters keep working', async () => {
    const salt = Buffer.alloc(16, 1);
    const hash = scryptSync(password, salt, 32, { N: 16384, r: 8, p: 1 });
    const older = `scrypt$16384$8$1$${salt.toString('base64')}$${hash.toString('base64')}`;
    expect(await hasher.verify(password, older)).toBe(true);
    expect(await hasher.verify(`${password}!`, older)).toBe(false);
  });

  it('verifyDummy is false for any password, and costs about what verify costs', async () => {
    expect(await hasher.verifyDummy(password)).toBe(false);
    expect(await hasher.verifyDummy('')).toBe(false);
    // Not a timing test (STYLE.md): only that the dummy really runs scrypt, not a shortcut.
    const started = process.hrtime.bigint();
    await hasher.verifyDummy(password);
    const dummyMs = Number(process.hrtime.bigint() - started) / 1e6;
    expect(dummyMs).toBeGreaterThan(5);
  });

  it.each([
    ['11 characters', 'a'.repeat(MIN_PASSWORD_LENGTH - 1), /at least 12/],
    ['empty', '', /at least 12/],
    ['1025 characters', 'a'.repeat(MAX_PASSWORD_LENGTH + 1), /at most 1024/],
    ['11 characters outside the BMP (22 UTF-16 units)', '\u{1F511}'.repeat(11), /at least 12/],
  ])('hash refuses a password of %s with a 400 naming password', async (_case, value, detail) => {
    const refusal = hasher.hash(value);
    await expect(refusal).rejects.toBeInstanceOf(DomainError);
    await expect(refusal).rejects.toMatchObject({ code: 'INVALID_VALUE', detail: expect.stringMatching(/password/) });
    await expect(refusal).rejects.toMatchObject({ detail: expect.stringMatching(detail) });
  });

  it('accepts exactly 12 and exactly 1024 characters', async () => {
    for (const value of ['a'.repeat(MIN_PASSWORD_LENGTH), 'b'.repeat(MAX_PASSWORD_LENGTH)]) {
      expect(await hasher.verify(value, await hasher.hash(value))).toBe(true);
    }
  });

  it('normalizes Unicode (NFKC): a composed and a decomposed é are the same password', async () => {
    const composed = 'caf\u00e9-passphrase';
    const decomposed = 'cafe\u0301-passphrase';
    expect(await hasher.verify(decomposed, await hasher.hash(composed))).toBe(true);
  });
});
