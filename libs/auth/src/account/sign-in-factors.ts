import { Injectable } from '@nestjs/common';
import type { Actor } from '@app/common';
import type { Transaction } from '@app/persistence';

/**
 * One of a person's second factors as their Security page shows it (DECISIONS 14.6): a credential of
 * the credential-management domain whose type signs people in (OATH_TOTP today; a passkey type when
 * it exists), in the wallet the person owns.
 */
export interface OwnFactor {
  /** The credential's id. */
  id: string;
  /** The credential type (`OATH_TOTP`, ...). */
  type: string;
  /** The name the person gave it, or the type's default name. */
  name: string;
  created: Date;
  /** When it last signed the person in; null when it has not since it was added (or nobody recorded it). */
  lastUsed: Date | null;
  /** The credential's status: `ISSUED` signs in; `ON_HOLD` (its device suspended) does not until resumed. */
  status: 'ISSUED' | 'ON_HOLD';
  /** Whether the person may remove it here: false for a factor on a card (the desk revokes a card as a card). */
  onCard: boolean;
}

/** What removing one factor did, or why it did not. */
export type FactorRemoval = { kind: 'removed'; factor: OwnFactor; revokedDevice: string } | { kind: 'not-found' } | { kind: 'on-card'; factor: OwnFactor };

/** What the person's own factor management asks of the library that keeps credentials. */
export interface SignInFactorSource {
  /** The person's factors that are not revoked, oldest first. */
  list(orgId: string, userId: string, tx?: Transaction): Promise<OwnFactor[]>;
  /** Renames one; undefined when it is not one of the person's factors. Audited. */
  rename(orgId: string, userId: string, id: string, name: string, actor: Actor, tx: Transaction): Promise<OwnFactor | undefined>;
  /** Revokes one (its software authenticator, with the device lifecycle's revoke), audited; in the caller's transaction. */
  remove(orgId: string, userId: string, id: string, actor: Actor, tx: Transaction): Promise<FactorRemoval>;
}

/**
 * The person's second factors: credential management keeps the credentials (libs/auth never reads its
 * tables) and registers its side when its module starts, as for OneTimeCodes and TotpEnrolment.
 */
@Injectable()
export class SignInFactors implements SignInFactorSource {
  private source?: SignInFactorSource;

  register(source: SignInFactorSource): void {
    if (this.source) throw new Error('SignInFactors: a source is already registered; one library keeps the credentials.');
    this.source = source;
  }

  list(orgId: string, userId: string, tx?: Transaction): Promise<OwnFactor[]> {
    return this.required().list(orgId, userId, tx);
  }

  rename(orgId: string, userId: string, id: string, name: string, actor: Actor, tx: Transaction): Promise<OwnFactor | undefined> {
    return this.required().rename(orgId, userId, id, name, actor, tx);
  }

  remove(orgId: string, userId: string, id: string, actor: Actor, tx: Transaction): Promise<FactorRemoval> {
    return this.required().remove(orgId, userId, id, actor, tx);
  }

  private required(): SignInFactorSource {
    if (!this.source) throw new Error('SignInFactors: no source registered (credential management is not loaded).');
    return this.source;
  }
}
