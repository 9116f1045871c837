import { ACR_VALUES, acrFor } from './authorization.service';

/** The acr of each sign-in's amr (DECISIONS 15.4, 14.5). */
describe('acrFor', () => {
  it.each([
    [['pwd'], ACR_VALUES.password],
    [['pwd', 'otp'], ACR_VALUES.mfa],
    [['pwd', 'hwk'], ACR_VALUES.mfa],
    [['hwk', 'user'], ACR_VALUES.mfa],
    [['sc', 'hwk'], ACR_VALUES.smartcard],
    [['hwk'], ACR_VALUES.smartcard],
  ])('%j is %s', (amr, acr) => {
    expect(acrFor(amr)).toBe(acr);
  });
});
