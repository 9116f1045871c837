import { createCipheriv, createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { DomainError } from '@app/common';
import { TargetDevice } from '@app/device';
import { KeyStore, KeyStoreError } from '@app/hsm';
import { CredentialType } from '../device-policies/device-policy.schema';

/** The HSM's DES3 master key every card's administration key is diversified from (DECISIONS 17.1). */
export const CARD_ADMIN_MASTER_KEY_LABEL = 'CARD_ADMIN_MASTER_KEY';

/** What the master key encrypts for a card: the first 24 bytes of SHA-256("card admin key" 0x00 CUID), CUID upper-case hex. */
export function cardDiversificationData(cuid: string): Buffer {
  return createHash('sha256')
    .update(Buffer.concat([Buffer.from('card admin key', 'ascii'), Buffer.from([0]), Buffer.from(cuid.toUpperCase(), 'ascii')]))
    .digest()
    .subarray(0, 24);
}

/** The minidriver's answer to a challenge: 3DES-ECB (24-byte key, no padding) of the 8-byte challenge. */
export function unblockResponse(cardKey: Buffer, challenge: Buffer): Buffer {
  const cipher = createCipheriv('des-ede3-ecb', cardKey, null);
  cipher.setAutoPadding(false);
  return Buffer.concat([cipher.update(challenge), cipher.final()]);
}

/** OATH credential types: a device policy of only these is an OTP token's (DECISIONS 17.1, "OTP tokens"). */
const OATH_TYPES: readonly CredentialType[] = ['OATH_TOTP', 'OATH_HOTP'];

/**
 * The CUID a device's administration key is diversified from: its first {ATR, CUID} pair's; undefined
 * for a device with none (a software authenticator, DECISIONS 14.4).
 */
export function adminKeyCuid(device: Pick<TargetDevice, 'externalIds'>): string | undefined {
  return device.externalIds[0]?.CUID || undefined;
}

/**
 * Whether encoding `device` under a device policy of `credentialTypes` makes a smart card, which gets
 * an administration key (DECISIONS 17.1): the device has an {ATR, CUID} pair (not a software
 * authenticator) and the policy holds a type other than OATH (not an OTP token).
 */
export function isSmartCardEncoding(device: Pick<TargetDevice, 'externalIds'>, credentialTypes: readonly CredentialType[]): boolean {
  return adminKeyCuid(device) !== undefined && credentialTypes.some((type) => !OATH_TYPES.includes(type));
}

/**
 * Card administration keys for the Windows minidriver's challenge/response PIN unblock: each card's
 * 24-byte 3DES key is 3DES-ECB(master key, cardDiversificationData(CUID)), computed in the HSM, so
 * the master key never leaves it; the card key exists on the host only while a response is computed.
 */
@Injectable()
export class CardAdminKeys {
  constructor(private readonly keys: KeyStore) {}

  /**
   * The card's administration key (also what the card client writes to the card at encoding, from
   * the SyncSession answer). The token holding anything but one DES3 key under the master key's
   * label is the operator's to fix: a 500 that says so (DECISIONS 17.1), not an unexpected error.
   */
  async cardKey(cuid: string): Promise<Buffer> {
    try {
      return await this.keys.encryptDes3(CARD_ADMIN_MASTER_KEY_LABEL, cardDiversificationData(cuid));
    } catch (error) {
      if (error instanceof KeyStoreError && error.code === 'KEY_UNUSABLE') throw masterKeyMisconfigured(error);
      throw error;
    }
  }

  /** The administration key of the card `cuid` as the SyncSession answer carries it: 48 hex digits, upper case. */
  async cardKeyHex(cuid: string): Promise<string> {
    const key = await this.cardKey(cuid);
    try {
      return key.toString('hex').toUpperCase();
    } finally {
      key.fill(0);
    }
  }

  /** The response to `challenge` (8 bytes) for the card `cuid`. */
  async response(cuid: string, challenge: Buffer): Promise<Buffer> {
    const key = await this.cardKey(cuid);
    try {
      return unblockResponse(key, challenge);
    } finally {
      key.fill(0);
    }
  }
}

function masterKeyMisconfigured(error: KeyStoreError): DomainError {
  return new DomainError(
    'MISCONFIGURED',
    `Card administration keys cannot be computed: ${error.message}. An HSM administrator must fix the token (DECISIONS 17.1); until then PIN unlock by challenge and the encoding of smart cards fail.`,
  );
}
