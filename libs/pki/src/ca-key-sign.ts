import { KeyStore, KeyStoreHash } from '@app/hsm';
import { Metrics } from '@app/observability';

/**
 * One sign with a CA key in the HSM (DER signature), timed into `hsm_sign_duration_seconds{use}`:
 * the operator's view of how long the HSM takes for certificates, CRLs and OCSP answers, and the
 * issuance benchmark's "where the time goes".
 */
export async function signWithCaKey(
  keys: KeyStore,
  metrics: Metrics,
  use: 'certificate' | 'crl' | 'ocsp',
  label: string,
  data: Buffer,
  hash: KeyStoreHash,
): Promise<Buffer> {
  const stop = metrics.hsmSigns.startTimer({ use });
  try {
    return await keys.sign(label, data, { hash, encoding: 'der' });
  } finally {
    stop();
  }
}
