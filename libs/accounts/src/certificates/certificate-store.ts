import { DomainError, notFound, uniqueness } from '@app/common';
import { Database, Transaction } from '@app/persistence';
import type { ParsedCertificate } from '../system-accounts/certificate-parser';

/** A certificate as the administration API shows it. */
export interface CertificateRow {
  thumbprint: string;
  subject: string;
  issuer: string;
  serial_number: string;
  not_before: Date;
  not_after: Date;
  expires_at: Date;
  created_at: Date;
}

/** A certificate as client and user authentication verify against it. */
export interface StoredCertificate {
  thumbprint: string;
  pem: string;
  not_before: Date;
  not_after: Date;
  expires_at: Date;
}

/** At most this many certificates per system account or user (DECISIONS 3.3). */
export const MAX_CERTIFICATES = 5;

/** Where one kind of owner keeps its certificates. Fixed constants only: they become SQL identifiers. */
export interface CertificateTable {
  ownerTable: 'system_accounts' | 'users';
  table: 'client_certificates' | 'user_certificates';
  ownerColumn: 'account_id' | 'user_id';
  /** "system account" or "user", for messages. */
  ownerLabel: string;
}

/**
 * Adds a certificate to its owner (a system account or a user), holding the owner's row lock so
 * that two concurrent uploads cannot both pass the limit of MAX_CERTIFICATES. Uploading a
 * certificate the owner already has renews its credential expiry when that has passed (the
 * interface's "re-upload to restore function"), and is a 409 while it is still active. Runs in the
 * caller's transaction, which records the audit event of the upload too.
 */
export async function addCertificate(
  db: Database,
  where: CertificateTable,
  ownerId: string,
  certificate: ParsedCertificate,
  now: Date,
  expiresAt: Date,
  tx: Transaction,
): Promise<CertificateRow> {
  const { ownerTable, table, ownerColumn, ownerLabel } = where;
  {
    const [owner] = await db.query(`SELECT 1 FROM ${ownerTable} WHERE id = $1 FOR UPDATE`, [ownerId], tx);
    if (!owner) throw notFound(`The ${ownerLabel} no longer exists.`);
    const [existing] = await db.query<{ expires_at: Date }>(
      `SELECT expires_at FROM ${table} WHERE ${ownerColumn} = $1 AND thumbprint = $2`,
      [ownerId, certificate.thumbprint],
      tx,
    );
    if (existing && existing.expires_at > now) {
      throw uniqueness(
        `This certificate (x5t#S256 ${certificate.thumbprint}) is already on the ${ownerLabel} and active until ${existing.expires_at.toISOString()}.`,
      );
    }
    if (!existing) {
      const [count] = await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${table} WHERE ${ownerColumn} = $1`, [ownerId], tx);
      if (Number(count.n) >= MAX_CERTIFICATES) {
        throw new DomainError(
          'CONFLICT',
          `The ${ownerLabel} already has ${MAX_CERTIFICATES} certificates, the most it may hold. Delete one before adding another.`,
        );
      }
    }
    const [row] = await db.query<CertificateRow>(
      `INSERT INTO ${table} (${ownerColumn}, thumbprint, pem, subject, issuer, serial_number, not_before, not_after, expires_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
       ON CONFLICT (${ownerColumn}, thumbprint) DO UPDATE SET expires_at = EXCLUDED.expires_at, created_at = EXCLUDED.created_at
       RETURNING thumbprint, subject, issuer, serial_number, not_before, not_after, expires_at, created_at`,
      [
        ownerId,
        certificate.thumbprint,
        certificate.pem,
        certificate.subject,
        certificate.issuer,
        certificate.serialNumber,
        certificate.notBefore,
        certificate.notAfter,
        expiresAt,
        now,
      ],
      tx,
    );
    return row;
  }
}
