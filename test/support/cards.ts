import { randomUUID } from 'node:crypto';
import { createOrganization, createSystemAccount, tokenBySecret } from './platform';
import { TestApp } from './test-app';

/** A card as the content-request suites use it: its id and its {ATR, CUID}. */
export interface TestCard {
  id: string;
  ATR: string;
  CUID: string;
}

let cuids = 0;

/**
 * A device stored directly (the bulk import's rows), in stock unless `status` and `owner` say
 * otherwise: what the credential-management suites issue to. CUIDs are unique in the run.
 */
export async function insertCard(t: TestApp, org: string, options: { status?: string; owner?: string | null; atr?: string } = {}): Promise<TestCard> {
  const id = randomUUID();
  const card = { id, ATR: options.atr ?? '3B8F8001', CUID: `${process.pid}${String(++cuids).padStart(6, '0')}` };
  await t.db.query("INSERT INTO devices (id, org_id, status, reason, owner_user_id, created_at, updated_at) VALUES ($1, $2, $3, 'NONE', $4, now(), now())", [
    id,
    org,
    options.status ?? 'AVAILABLE',
    options.owner ?? null,
  ]);
  await t.db.query('INSERT INTO device_external_ids (device_id, org_id, position, atr, cuid) VALUES ($1, $2, 1, $3, $4)', [id, org, card.ATR, card.CUID]);
  return card;
}

/** A cardholder created through the admin API (`extra`: password, emails, ...), with the wallet every user gets. */
export async function createCardholder(
  t: Pick<TestApp, 'http' | 'db'>,
  adminToken: string,
  org: string,
  userName: string,
  extra: Record<string, unknown> = {},
): Promise<{ id: string; wallet: string }> {
  const created = await t.http
    .post(`/admin/v1/organizations/${org}/users`)
    .auth(adminToken, { type: 'bearer' })
    .send({ userName, role: 'Cardholder', ...extra });
  if (created.status !== 201) throw new Error(`create cardholder ${userName} failed: ${created.status} ${JSON.stringify(created.body)}`);
  const [wallet] = (await t.db.query('SELECT id FROM wallets WHERE owner_user_id = $1', [created.body.id])).rows;
  return { id: created.body.id, wallet: wallet.id };
}

/**
 * An organization with its issuing CA and one system account per entry of `roles` (name -> role),
 * as the issuance suites start: answers each account's token and Client ID by name.
 */
export async function createIssuingOrganization(
  t: TestApp,
  adminToken: string,
  org: string,
  roles: Record<string, string>,
): Promise<{ tokens: Record<string, string>; clientIds: Record<string, string> }> {
  await createOrganization(t.http, adminToken, org);
  const ca = await t.http.post(`/admin/v1/organizations/${org}/ca`).auth(adminToken, { type: 'bearer' }).send({});
  if (ca.status !== 201) throw new Error(`create the CA of ${org} failed: ${ca.status} ${JSON.stringify(ca.body)}`);
  const tokens: Record<string, string> = {};
  const clientIds: Record<string, string> = {};
  for (const [name, role] of Object.entries(roles)) {
    const account = await createSystemAccount(t.http, adminToken, org, { role });
    clientIds[name] = account.clientId;
    tokens[name] = await tokenBySecret(t.http, org, account.clientId, account.secret);
  }
  return { tokens, clientIds };
}
