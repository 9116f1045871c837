import { Injectable } from '@nestjs/common';
import type { Actor } from '@app/common';
import type { Transaction } from '@app/persistence';

/** A passkey as the sign-in pages read it (DECISIONS 14.5). */
export interface StoredPasskey {
  /** The domain credential's id (type FIDO2). */
  credentialId: string;
  userId: string;
  /** The WebAuthn credential id, base64url. */
  webauthnId: string;
  /** The WebAuthn user handle the passkey was registered with, base64url. */
  userHandle: string;
  /** COSE_Key bytes. */
  publicKey: Buffer;
  signCount: number;
  transports: string[];
  name: string;
  /** The credential's status: only ISSUED signs in (ON_HOLD follows a suspended device or wallet, REVOKED a revoked one). */
  status: 'ISSUED' | 'ON_HOLD' | 'REVOKED';
}

/** What a verified registration stores. */
export interface NewPasskey {
  webauthnId: string;
  userHandle: string;
  publicKey: Uint8Array;
  signCount: number;
  backupEligible: boolean;
  backupState: boolean;
  transports: string[];
  name: string;
}

/** What the sign-in pages ask of the library that keeps people's passkeys (credential management). */
export interface PasskeySource {
  /** The person's passkeys that sign in (ISSUED), for allowCredentials and excludeCredentials. */
  owned(orgId: string, userId: string): Promise<StoredPasskey[]>;
  /** A passkey of the organization by its WebAuthn credential id (base64url), whatever its status. */
  find(orgId: string, webauthnId: string): Promise<StoredPasskey | undefined>;
  /**
   * Stores the passkey in the caller's transaction as a FIDO2 credential: ISSUED, in the person's
   * wallet, on a software-authenticator device issued to them, audited. Answers the credential id;
   * a WebAuthn credential id already registered in the organization is a CONFLICT.
   */
  enrol(orgId: string, userId: string, passkey: NewPasskey, actor: Actor, tx: Transaction): Promise<string>;
  /**
   * Records a verified use: the new counter and backup state, only while the credential is ISSUED and
   * the counter moves forward (or both stay 0), in one statement. False when it did not (a counter
   * that went backwards, or a use that raced another with the same counter: a cloned authenticator).
   */
  recordUse(orgId: string, credentialId: string, signCount: number, backupState: boolean, at: Date): Promise<boolean>;
}

/**
 * People's passkeys: credential management keeps them (libs/auth never reads its tables) and
 * registers its side when its module starts, as it does for TotpEnrolment. Without a source (the
 * command line) nobody holds a passkey.
 */
@Injectable()
export class PasskeyCredentials implements PasskeySource {
  private source?: PasskeySource;

  register(source: PasskeySource): void {
    if (this.source) throw new Error('PasskeyCredentials: a source is already registered; one library keeps the passkeys.');
    this.source = source;
  }

  owned(orgId: string, userId: string): Promise<StoredPasskey[]> {
    return this.source ? this.source.owned(orgId, userId) : Promise.resolve([]);
  }

  find(orgId: string, webauthnId: string): Promise<StoredPasskey | undefined> {
    return this.source ? this.source.find(orgId, webauthnId) : Promise.resolve(undefined);
  }

  enrol(orgId: string, userId: string, passkey: NewPasskey, actor: Actor, tx: Transaction): Promise<string> {
    return this.required().enrol(orgId, userId, passkey, actor, tx);
  }

  recordUse(orgId: string, credentialId: string, signCount: number, backupState: boolean, at: Date): Promise<boolean> {
    return this.required().recordUse(orgId, credentialId, signCount, backupState, at);
  }

  private required(): PasskeySource {
    if (!this.source) throw new Error('PasskeyCredentials: no source registered (credential management is not loaded).');
    return this.source;
  }
}
