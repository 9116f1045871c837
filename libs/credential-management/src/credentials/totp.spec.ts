import { base32Decode, hotp, matchingStep, timeStep } from './totp';

describe('TOTP (RFC 6238)', () => {
  const rfcSecret = Buffer.from('12345678901234567890');

  it('gives the RFC 6238 appendix B test values (SHA-1, 8 digits)', () => {
    const cases: [number, string][] = [
      [59, '94287082'],
      [1111111109, '07081804'],
      [1111111111, '14050471'],
      [1234567890, '89005924'],
      [2000000000, '69279037'],
      [20000000000, '65353130'],
    ];
    for (const [seconds, code] of cases) expect(hotp(rfcSecret, timeStep(new Date(seconds * 1000), 30), 8)).toBe(code);
  });

  it('gives the RFC 4226 appendix D values (6 digits)', () => {
    expect([0, 1, 2, 9].map((c) => hotp(rfcSecret, c, 6))).toEqual(['755224', '287082', '359152', '520489']);
  });

  it('decodes base32 as authenticator apps read it', () => {
    expect(base32Decode('GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ')).toEqual(rfcSecret);
    expect(base32Decode('not base32!')).toBeUndefined();
  });

  it('accepts one step of drift either way, and only steps after the last accepted one', () => {
    const at = new Date(1111111111 * 1000);
    const now = timeStep(at, 30);
    const code = (step: number) => hotp(rfcSecret, step, 6);
    expect(matchingStep(rfcSecret, code(now), at, 30, 6, null)).toBe(now);
    expect(matchingStep(rfcSecret, code(now - 1), at, 30, 6, null)).toBe(now - 1);
    expect(matchingStep(rfcSecret, code(now + 1), at, 30, 6, null)).toBe(now + 1);
    expect(matchingStep(rfcSecret, code(now - 2), at, 30, 6, null)).toBeUndefined();
    expect(matchingStep(rfcSecret, code(now + 2), at, 30, 6, null)).toBeUndefined();
    expect(matchingStep(rfcSecret, code(now), at, 30, 6, now)).toBeUndefined();
    expect(matchingStep(rfcSecret, code(now - 1), at, 30, 6, now - 1)).toBeUndefined();
    expect(matchingStep(rfcSecret, code(now + 1), at, 30, 6, now)).toBe(now + 1);
    expect(matchingStep(rfcSecret, '12345', at, 30, 6, null)).toBeUndefined();
  });
});
