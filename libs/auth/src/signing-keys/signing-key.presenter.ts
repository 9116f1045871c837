import { isoTimestamp } from '@app/common';
import type { SigningKeyRow } from './signing-key.repository';

/** A token-signing key as the admin API and the command line show it; `activatableAt` only for a next key. */
export function presentSigningKey(row: SigningKeyRow, activatableAt: Date) {
  return {
    kid: row.kid,
    state: row.state,
    algorithm: row.algorithm,
    hsmLabel: row.hsm_label,
    created: isoTimestamp(row.created_at),
    ...(row.state === 'next' ? { activatableAt: isoTimestamp(activatableAt) } : {}),
    ...(row.activate_at ? { activateAt: isoTimestamp(row.activate_at) } : {}),
    activated: row.activated_at ? isoTimestamp(row.activated_at) : null,
    retired: row.retired_at ? isoTimestamp(row.retired_at) : null,
    notAfter: row.not_after ? isoTimestamp(row.not_after) : null,
    lastTokenExpires: row.last_token_expires_at ? isoTimestamp(row.last_token_expires_at) : null,
    ...(row.withdrawn_at ? { withdrawn: isoTimestamp(row.withdrawn_at), withdrawReason: row.withdraw_reason } : {}),
    publicJwk: row.public_jwk,
  };
}

/** An emergency withdrawal's answer: the withdrawn key and, when it was the active key, the key now signing. */
export function presentWithdrawal(result: { withdrawn: SigningKeyRow; replacement?: SigningKeyRow }, activatableAt: (row: SigningKeyRow) => Date) {
  return {
    ...presentSigningKey(result.withdrawn, activatableAt(result.withdrawn)),
    ...(result.replacement ? { replacedBy: presentSigningKey(result.replacement, activatableAt(result.replacement)) } : {}),
  };
}
