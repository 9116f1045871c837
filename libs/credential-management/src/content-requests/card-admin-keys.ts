import { createCipheriv, createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { KeyStore } from '@app/hsm';

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

/**
 * Card administration keys for the Windows minidriver's challenge/response PIN unblock: each card's
 * 24-byte 3DES key is 3DES-ECB(master key, cardDiversificationData(CUID)), computed in the HSM, so
 * the master key never leaves it; the card key exists on the host only while a response is computed.
 */
@Injectable()
export class CardAdminKeys {
  constructor(private readonly keys: KeyStore) {}

  /** The card's administration key (also what the card client writes to the card at encoding). */
  cardKey(cuid: string): Promise<Buffer> {
    return this.keys.encryptDes3(CARD_ADMIN_MASTER_KEY_LABEL, cardDiversificationData(cuid));
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
