import { Injectable } from '@nestjs/common';
import type { Actor } from '@app/audit';
import type { Transaction } from '@app/persistence';

/** Certificates the CA revoked itself, all at once (a generation revoked as compromised), as listeners learn of it. */
export interface CertificateRevocation {
  orgId: string;
  serials: readonly string[];
  /** RFC 5280 reason (cACompromise). */
  reason: 'cACompromise';
  /** The audit action that caused it (`ca.revoke`). */
  via: string;
  actor: Actor;
}

/**
 * What follows certificates the CA revokes on its own, registered by the libraries that hold them
 * (credential management: the credentials and the sign-in sessions of those certificates), called
 * in the revocation's transaction so that all of it commits or none. `lock` runs before the CA row
 * is locked, with the serials to be revoked, so that the rows that follow a certificate are locked
 * before the CA row, in the order every other revocation takes them (credentials, then the CA);
 * `revoked` runs once they are revoked, with every serial revoked (a certificate issued between the
 * two calls included).
 */
export interface CertificateRevocationListener {
  lock(orgId: string, serials: readonly string[], tx: Transaction): Promise<void>;
  revoked(revocation: CertificateRevocation, tx: Transaction): Promise<void>;
}

@Injectable()
export class CertificateRevocationListeners {
  private readonly listeners: CertificateRevocationListener[] = [];

  register(listener: CertificateRevocationListener): void {
    this.listeners.push(listener);
  }

  async lock(orgId: string, serials: readonly string[], tx: Transaction): Promise<void> {
    for (const listener of this.listeners) await listener.lock(orgId, serials, tx);
  }

  async revoked(revocation: CertificateRevocation, tx: Transaction): Promise<void> {
    for (const listener of this.listeners) await listener.revoked(revocation, tx);
  }
}
