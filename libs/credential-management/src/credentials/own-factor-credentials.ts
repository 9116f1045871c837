import { Injectable } from '@nestjs/common';
import type { FactorRemoval, OwnFactor, SignInFactorSource } from '@app/auth';
import { Actor, Clock } from '@app/common';
import { OwnedDevices } from '@app/device';
import { Database, Transaction } from '@app/persistence';

/**
 * The credential types that are a person's second factor at the hosted login page (DECISIONS 14.1,
 * 14.6): what the Security page lists. A new sign-in factor (a passkey type) is added here and its
 * credentials appear there, with their name, dates and removal, without another change.
 */
export const SIGN_IN_FACTOR_TYPES: readonly string[] = ['OATH_TOTP', 'FIDO2'];

/** What a factor is called until its person names it (a passkey is named at registration). */
const DEFAULT_NAMES: Record<string, string> = { OATH_TOTP: 'Authenticator app', FIDO2: 'Passkey' };

interface FactorRow {
  id: string;
  type: string;
  status: 'ISSUED' | 'ON_HOLD';
  name: string | null;
  created_at: Date;
  last_used_at: Date | null;
  device_id: string;
}

/** Not revoked, of a sign-in factor type, in the wallet the person owns. */
const OWN_FACTORS = `FROM credentials c JOIN wallets w ON w.id = c.wallet_id
   WHERE c.org_id = $1 AND w.owner_user_id = $2 AND c.type = ANY($3::text[]) AND c.status IN ('ISSUED', 'ON_HOLD')`;

/**
 * A person's own second factors (libs/auth SignInFactors; DECISIONS 14.6): listed, renamed (the
 * credential's `name`) and removed. Removing one revokes its software authenticator through the
 * device lifecycle (device.revoke, and the credential follower's credential.revoke), as an
 * administrator's reset does for all of them; a factor on a card is the desk's to revoke, with the card.
 */
@Injectable()
export class OwnFactorCredentials implements SignInFactorSource {
  constructor(
    private readonly db: Database,
    private readonly devices: OwnedDevices,
    private readonly clock: Clock,
  ) {}

  async list(orgId: string, userId: string, tx?: Transaction): Promise<OwnFactor[]> {
    const rows = await this.db.query<FactorRow>(
      `SELECT c.id, c.type, c.status, c.name, c.created_at, c.last_used_at, c.device_id ${OWN_FACTORS} ORDER BY c.created_at, c.id`,
      [orgId, userId, SIGN_IN_FACTOR_TYPES],
      tx,
    );
    const software = await this.devices.softwareAmong(
      orgId,
      rows.map((row) => row.device_id),
      tx,
    );
    return rows.map((row) => factorOf(row, !software.has(row.device_id)));
  }

  async rename(orgId: string, userId: string, id: string, name: string, _actor: Actor, tx: Transaction): Promise<OwnFactor | undefined> {
    const [renamed] = await this.db.query<{ id: string }>(
      `UPDATE credentials c SET name = $5, updated_at = $6, version = c.version + 1
         FROM wallets w
        WHERE w.id = c.wallet_id AND c.org_id = $1 AND w.owner_user_id = $2 AND c.id = $4
          AND c.type = ANY($3::text[]) AND c.status IN ('ISSUED', 'ON_HOLD')
        RETURNING c.id`,
      [orgId, userId, SIGN_IN_FACTOR_TYPES, id, name, this.clock.now()],
      tx,
    );
    if (!renamed) return undefined;
    return (await this.list(orgId, userId, tx)).find((factor) => factor.id === id);
  }

  async remove(orgId: string, userId: string, id: string, actor: Actor, tx: Transaction): Promise<FactorRemoval> {
    const [row] = await this.db.query<FactorRow>(
      `SELECT c.id, c.type, c.status, c.name, c.created_at, c.last_used_at, c.device_id ${OWN_FACTORS} AND c.id = $4 FOR UPDATE OF c`,
      [orgId, userId, SIGN_IN_FACTOR_TYPES, id],
      tx,
    );
    if (!row) return { kind: 'not-found' };
    const software = await this.devices.softwareAmong(orgId, [row.device_id], tx);
    const factor = factorOf(row, !software.has(row.device_id));
    if (factor.onCard) return { kind: 'on-card', factor };
    const [revokedDevice] = await this.devices.revokeSoftwareAuthenticatorsOf(orgId, userId, actor, tx, { only: row.device_id, via: 'user.factor.remove' });
    if (!revokedDevice) return { kind: 'not-found' };
    return { kind: 'removed', factor, revokedDevice };
  }
}

function factorOf(row: FactorRow, onCard: boolean): OwnFactor {
  return {
    id: row.id,
    type: row.type,
    name: row.name ?? DEFAULT_NAMES[row.type] ?? row.type,
    created: row.created_at,
    lastUsed: row.last_used_at,
    status: row.status,
    onCard,
  };
}
