import { DataCipher, SealedValue, UnknownKeyError } from './data-cipher';

const BATCH = 200;

/** One sealed value of a row: what it is sealed with, its context, and the conditional write of its new seal. */
export interface SealedField {
  sealed: SealedValue | null | undefined;
  context: string;
  /** Writes `to` only if the stored value is still `from`, the one read; true when it wrote. */
  write: (from: SealedValue, to: SealedValue) => Promise<boolean>;
}

export interface ResealResult {
  resealed: number;
  /** Rows with a value the ring cannot open, by row id and the key id it names (never a value). */
  unreadable: { id: string; keyId: string }[];
}

/**
 * Key rotation's loop (DECISIONS 10): pages through the rows a library finds sealed with a key other
 * than the first of DATA_ENCRYPTION_KEYS (in id order, `after` the last id seen) and seals each such
 * value again with the first key. A value the ring cannot open is left as it is and reported. The
 * tables stay with the library that owns them: it passes its own paging and conditional writes.
 */
export async function resealAll<R extends { id: string }>(
  cipher: DataCipher,
  findSealedWithOtherKey: (currentKeyId: string, after: string, limit: number) => Promise<R[]>,
  fields: (row: R) => SealedField[],
): Promise<ResealResult> {
  let resealed = 0;
  const unreadable: { id: string; keyId: string }[] = [];
  for (let after = '0'; ;) {
    const batch = await findSealedWithOtherKey(cipher.currentKeyId, after, BATCH);
    for (const row of batch) {
      for (const { sealed, context, write } of fields(row)) {
        if (!sealed || sealed.keyId === cipher.currentKeyId) continue;
        let plain: string;
        try {
          plain = cipher.open(sealed, context);
        } catch (error) {
          unreadable.push({ id: row.id, keyId: error instanceof UnknownKeyError ? error.keyId : sealed.keyId });
          continue;
        }
        if (await write(sealed, cipher.seal(plain, context))) resealed++;
      }
    }
    if (batch.length < BATCH) break;
    after = batch[batch.length - 1].id;
  }
  return { resealed, unreadable };
}
