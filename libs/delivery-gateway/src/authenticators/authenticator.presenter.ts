import { CANONICAL_PREFIX, isoTimestamp, listResponse } from '@app/common';
import { AuthenticatorRow } from './authenticator.repository';
import { AUTHENTICATOR_CHALLENGE_SCHEMA, AUTHENTICATOR_RESOURCE_TYPE, AUTHENTICATOR_SCHEMA } from './authenticator.schema';
import { Challenge, Holder } from './authenticator.service';

/** Authenticators as SCIM resources, located where the caller reached them: under Self or under the user. */
export class AuthenticatorPresenter {
  constructor(private readonly baseUrl: string) {}

  location(holder: Holder, id: string): string {
    const collection = holder.via === 'self' ? 'Self/Authenticators' : `Users/${holder.userId}/Authenticators`;
    return `${this.baseUrl}${CANONICAL_PREFIX}/${collection}/${id}`;
  }

  authenticator(holder: Holder, row: AuthenticatorRow) {
    return {
      schemas: [AUTHENTICATOR_SCHEMA],
      id: row.id,
      displayName: row.display_name,
      operatingSystem: row.operating_system,
      publicKey: row.public_key,
      thumbprint: row.thumbprint,
      // `stale` once a hub called the push handle gone: no notification reaches it until it is registered again.
      status: row.stale_since ? 'stale' : 'active',
      ...(row.stale_since ? { staleSince: isoTimestamp(row.stale_since) } : {}),
      owner: { value: row.user_id, $ref: `${this.baseUrl}${CANONICAL_PREFIX}/Users/${row.user_id}`, type: 'User' },
      meta: {
        resourceType: AUTHENTICATOR_RESOURCE_TYPE,
        created: isoTimestamp(row.created_at),
        lastModified: isoTimestamp(row.updated_at),
        location: this.location(holder, row.id),
        version: String(row.version),
      },
    };
  }

  /** Every authenticator of the person, oldest first: a person has a handful, so the list is not paged. */
  list(holder: Holder, rows: AuthenticatorRow[]) {
    return listResponse(
      rows.map((row) => this.authenticator(holder, row)),
      rows.length,
      { startIndex: 1, count: rows.length },
    );
  }

  challenge(challenge: Challenge) {
    return {
      schemas: [AUTHENTICATOR_CHALLENGE_SCHEMA],
      challenge: challenge.challenge,
      signingInput: challenge.signingInput,
      expiresAt: isoTimestamp(challenge.expiresAt),
    };
  }
}
