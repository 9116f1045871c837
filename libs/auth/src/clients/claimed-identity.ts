import { Injectable } from '@nestjs/common';
import { createHmac, hkdfSync } from 'node:crypto';
import { USER_NAME_PATTERN } from '@app/accounts';
import { AppConfig } from '@app/config';

/** A Client ID: `{organization_id}-{suffix}` (DECISIONS 2, 4). */
const CLIENT_ID_PATTERN = /^[A-Za-z0-9_]{1,64}-[A-Za-z0-9]{1,64}$/;
/** Hex digits of the keyed hash kept of an unverified identity: 64 bits, enough to tell repeated attempts apart. */
const HASH_DIGITS = 16;

/**
 * Who a caller claimed to be (a Client ID, a userName, a CIBA login_hint, an assertion's iss/sub),
 * and whether it names an existing account: a system account of the path's organization, or a user
 * of it. Only the service can say the latter, after its lookup.
 */
export interface ClaimedIdentity {
  text: string;
  exists: boolean;
}

/** The claim of a request, or undefined when the request named nobody. */
export function claimed(text: string | undefined, exists: boolean): ClaimedIdentity | undefined {
  return text === undefined || text === '' ? undefined : { text, exists };
}

/**
 * What the audit log keeps of an identity a caller claimed but did not prove (DECISIONS 11): the text
 * itself only when it names an existing account; any other text may be a secret typed into the
 * identity field (a client secret or a password passes the userName form), so it is kept as its shape,
 * its length and a keyed hash: `<unknown: 43 chars, #0123456789abcdef>` for text of the Client ID or
 * userName form, `<malformed: ...>` for any other. The hash is an HMAC-SHA-256 under a key derived from
 * SECRET_PEPPER (HKDF, its own label), so repeated attempts with the same text carry the same hash
 * (an investigator correlates them across events, addresses and instances) while the text cannot be
 * read back, nor guessed from the log alone without the pepper. The one rule of every place an
 * unverified identity reaches the audit log: failed client and user authentication, the login page,
 * the lockout events, CIBA's login_hint.
 */
@Injectable()
export class ClaimedIdentities {
  private readonly key: Buffer;

  constructor(config: AppConfig) {
    this.key = Buffer.from(hkdfSync('sha256', config.secretPepper, Buffer.alloc(0), 'audit-claimed-identity/v1', 32));
  }

  /** The actor or target recorded for a claim; `unknown` when nothing was claimed. */
  recorded(claim: ClaimedIdentity | undefined): string {
    if (!claim) return 'unknown';
    if (claim.exists) return claim.text;
    const shape = CLIENT_ID_PATTERN.test(claim.text) || USER_NAME_PATTERN.test(claim.text) ? 'unknown' : 'malformed';
    return `<${shape}: ${[...claim.text].length} chars, #${this.hash(claim.text)}>`;
  }

  /** The keyed hash an unverified claim is recorded by (an operator holding SECRET_PEPPER can compute it for a name to look for). */
  hash(text: string): string {
    return createHmac('sha256', this.key).update(text, 'utf8').digest('hex').slice(0, HASH_DIGITS);
  }
}
