import { createHmac, timingSafeEqual } from 'node:crypto';

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 (no padding, case-insensitive) to bytes; undefined when it is not base32. */
export function base32Decode(text: string): Buffer | undefined {
  const clean = text.replace(/=+$/, '').toUpperCase();
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const char of clean) {
    const index = BASE32.indexOf(char);
    if (index < 0) return undefined;
    value = (value << 5) | index;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** RFC 4226 HOTP with HMAC-SHA1 (the algorithm the otpauth URI SyncSession answers names), `digits` long. */
export function hotp(secret: Buffer, counter: number, digits: number): string {
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac('sha1', secret).update(message).digest();
  const offset = mac[mac.length - 1] & 0x0f;
  const binary = (mac.readUInt32BE(offset) & 0x7fffffff) % 10 ** digits;
  return String(binary).padStart(digits, '0');
}

/** RFC 6238's time step of `at` for a `period`-second step (T0 = 0). */
export function timeStep(at: Date, period: number): number {
  return Math.floor(at.getTime() / 1000 / period);
}

/**
 * The time step among `now - 1, now, now + 1` (RFC 6238 5.2: one step of drift either way) whose
 * code `code` is, when it is later than `lastStep`; undefined otherwise. Compared in constant time.
 */
export function matchingStep(secret: Buffer, code: string, at: Date, period: number, digits: number, lastStep: number | null): number | undefined {
  if (code.length !== digits) return undefined;
  const now = timeStep(at, period);
  let found: number | undefined;
  for (const step of [now - 1, now, now + 1]) {
    const expected = Buffer.from(hotp(secret, step, digits));
    if (timingSafeEqual(expected, Buffer.from(code)) && (lastStep === null || step > lastStep) && found === undefined) found = step;
  }
  return found;
}

/** RFC 4648 base32 without padding, as authenticator apps read OATH secrets. */
export function base32(bytes: Buffer): string {
  const alphabet = BASE32;
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return bits > 0 ? out + alphabet[(value << (5 - bits)) & 31] : out;
}

/** The Key Uri Format authenticator apps read: otpauth://totp/Issuer:account?secret=...&issuer=...&digits=...&period=... */
export function otpauthUri(type: 'OATH_TOTP' | 'OATH_HOTP', issuer: string, account: string, secret: string, digits: number, period: number | null): string {
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(account)}`;
  const common = `secret=${secret}&issuer=${encodeURIComponent(issuer)}&algorithm=SHA1&digits=${digits}`;
  return type === 'OATH_TOTP' ? `otpauth://totp/${label}?${common}&period=${period}` : `otpauth://hotp/${label}?${common}&counter=0`;
}
