import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AuditLog, byActor } from '@app/audit';
import type { NewPasskey, PasskeySource, StoredPasskey } from '@app/auth';
import { Actor, Clock, DomainError } from '@app/common';
import { DeviceContents, RequestedDevices } from '@app/device';
import { Database, Transaction } from '@app/persistence';
import { WalletRepository } from '../wallets/wallet.repository';
import { CredentialRepository } from './credential.repository';

interface PasskeyRow {
  credential_id: string;
  user_id: string;
  webauthn_id: Buffer;
  user_handle: Buffer;
  public_key: Buffer;
  sign_count: string;
  transports: string[];
  name: string | null;
  status: StoredPasskey['status'];
}

/** A passkey with its credential's status and owner: the credential is in the wallet its owner holds. */
const PASSKEY = `SELECT p.credential_id, w.owner_user_id AS user_id, p.webauthn_id, p.user_handle, p.public_key, p.sign_count, p.transports, c.name, c.status
   FROM passkeys p JOIN credentials c ON c.id = p.credential_id JOIN wallets w ON w.id = c.wallet_id`;

/**
 * People's passkeys (libs/auth PasskeyCredentials; DECISIONS 14.5): each is a credential of this
 * library like the self-enrolled TOTP (type FIDO2, ISSUED, in the person's wallet, no content
 * request, on a software-authenticator device issued in the same transaction, audited
 * `credential.issue`), so the desk suspends and revokes it through its device as any other and it is
 * in the person's one inventory. Its WebAuthn part is a row of `passkeys`: the credential id, the
 * COSE public key, the signature counter (moved forward only, in the database), the backup flags,
 * the transports. Its name and last use are the credential's (`credentials.name`, `last_used_at`), as
 * for every factor on the Security page (DECISIONS 14.6). Each passkey has a software-authenticator
 * device of its own, so revoking one (the desk, or its person on the Security page) leaves the others.
 */
@Injectable()
export class SelfEnrolledPasskeys implements PasskeySource {
  constructor(
    private readonly db: Database,
    private readonly credentials: CredentialRepository,
    private readonly wallets: WalletRepository,
    private readonly devices: RequestedDevices,
    private readonly deviceContents: DeviceContents,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
  ) {}

  async owned(orgId: string, userId: string): Promise<StoredPasskey[]> {
    const rows = await this.db.query<PasskeyRow>(
      `${PASSKEY} WHERE p.org_id = $1 AND w.owner_user_id = $2 AND c.status = 'ISSUED' ORDER BY p.created_at, p.credential_id`,
      [orgId, userId],
    );
    return rows.map(passkeyOf);
  }

  async find(orgId: string, webauthnId: string): Promise<StoredPasskey | undefined> {
    if (!/^[A-Za-z0-9_-]{1,1400}$/.test(webauthnId)) return undefined;
    const [row] = await this.db.query<PasskeyRow>(`${PASSKEY} WHERE p.org_id = $1 AND p.webauthn_id = $2`, [orgId, Buffer.from(webauthnId, 'base64url')]);
    return row ? passkeyOf(row) : undefined;
  }

  async enrol(orgId: string, userId: string, passkey: NewPasskey, actor: Actor, tx: Transaction): Promise<string> {
    const wallet = await this.wallets.findByOwner(orgId, userId, tx);
    if (!wallet) throw new DomainError('CONFLICT', 'This person has no wallet to hold a credential; ask an administrator.');
    if (wallet.status !== 'ACTIVE') throw new DomainError('CONFLICT', "This person's wallet is suspended; ask an administrator to resume it.");
    const via = 'self-enrolment';
    const deviceId = await this.devices.issueSoftwareAuthenticator(orgId, userId, actor, tx, via);
    const id = randomUUID();
    const now = this.clock.now();
    await this.credentials.insert(
      [
        {
          id,
          org_id: orgId,
          type: 'FIDO2',
          status: 'ISSUED',
          device_id: deviceId,
          wallet_id: wallet.id,
          content_request_id: null,
          certificate_serial: null,
          certificate: null,
          oath_key_id: null,
          oath_secret: null,
          oath_digits: null,
          oath_period: null,
          name: passkey.name,
          expires_at: null,
          created_at: now,
        },
      ],
      tx,
    );
    await this.db.query(
      `INSERT INTO passkeys (credential_id, org_id, webauthn_id, user_handle, public_key, sign_count, backup_eligible, backup_state, transports, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [
        id,
        orgId,
        Buffer.from(passkey.webauthnId, 'base64url'),
        Buffer.from(passkey.userHandle, 'base64url'),
        Buffer.from(passkey.publicKey),
        passkey.signCount,
        passkey.backupEligible,
        passkey.backupState,
        passkey.transports,
        now,
      ],
      tx,
    );
    this.deviceContents.changed(orgId, [deviceId], tx);
    await this.audit.record(
      {
        org: orgId,
        ...byActor(actor),
        action: 'credential.issue',
        target: id,
        outcome: 'success',
        details: { type: 'FIDO2', status: 'ISSUED', device: deviceId, wallet: wallet.id, via, name: passkey.name, backupEligible: passkey.backupEligible },
      },
      tx,
    );
    return id;
  }

  async recordUse(orgId: string, credentialId: string, signCount: number, backupState: boolean, at: Date): Promise<boolean> {
    // Forward only, in the statement: of two uses with the same counter exactly one is recorded, and
    // a counter lower than the stored one (a copied authenticator) never is (WebAuthn §6.1.1).
    // The credential's last use (the Security page's "last used") moves in the same statement.
    const rows = await this.db.query<{ credential_id: string }>(
      `WITH used AS (
         UPDATE passkeys p SET sign_count = $3, backup_state = $4
           FROM credentials c
          WHERE p.credential_id = $2 AND p.org_id = $1 AND c.id = p.credential_id AND c.status = 'ISSUED'
            AND (p.sign_count < $3 OR ($3 = 0 AND p.sign_count = 0))
          RETURNING p.credential_id)
       UPDATE credentials c SET last_used_at = $5 FROM used WHERE c.id = used.credential_id
       RETURNING c.id AS credential_id`,
      [orgId, credentialId, signCount, backupState, at],
    );
    return rows.length > 0;
  }
}

function passkeyOf(row: PasskeyRow): StoredPasskey {
  return {
    credentialId: row.credential_id,
    userId: row.user_id,
    webauthnId: row.webauthn_id.toString('base64url'),
    userHandle: row.user_handle.toString('base64url'),
    publicKey: row.public_key,
    signCount: Number(row.sign_count),
    transports: row.transports,
    name: row.name ?? 'Passkey',
    status: row.status,
  };
}
