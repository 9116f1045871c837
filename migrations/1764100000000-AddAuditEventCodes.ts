import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The codes of the actions recorded before this migration, frozen here (libs/audit's catalogue may
 * grow, but a code is never renumbered).
 */
const CODES: [string, number][] = [
  ['device.create', 10000],
  ['device.activate', 10005],
  ['device.delete', 10007],
  ['device.suspend', 10009],
  ['device.resume', 10010],
  ['device.revoke', 10011],
  ['device.terminate', 10012],
  ['device.import', 10100],
  ['user.create', 40001],
  ['user.update', 40002],
  ['user.delete', 40003],
  ['user.password.set', 40005],
  ['user.certificate.enroll', 40006],
  ['organization.create', 70001],
  ['organization.update', 70002],
  ['organization.delete', 70003],
  ['organization.settings.update', 70005],
  ['admin.access_denied', 70004],
  ['system_account.create', 71001],
  ['system_account.update', 71002],
  ['system_account.delete', 71003],
  ['client_secret.create', 71004],
  ['client_secret.revoke', 71005],
  ['client_certificate.upload', 71006],
  ['client_certificate.delete', 71007],
  ['application.certify', 72001],
  ['application.uncertify', 72002],
  ['token.issue', 80001],
  ['token.revoke', 80002],
  ['authentication.fail', 80003],
  ['authentication.lockout', 80004],
  ['certificate.expired_use', 80005],
  ['deliveryGateway.create', 90001],
  ['deliveryGateway.replace', 90002],
  ['deliveryGateway.delete', 90003],
  ['authenticatorPolicy.create', 91001],
  ['authenticatorPolicy.replace', 91002],
  ['authenticatorPolicy.delete', 91003],
];

/**
 * Audit events carry a stable numeric code (CREDENTIAL-MANAGEMENT.md, "Events"; filter `?code=`) and
 * the correlation id of the request that caused them. Existing rows get their action's code; the
 * append-only trigger is switched off for that backfill only, inside this migration's transaction.
 */
export class AddAuditEventCodes1764100000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE audit_events ADD COLUMN code integer, ADD COLUMN correlation_id text');
    await q.query('ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_change');
    await q.query(
      `UPDATE audit_events e SET code = c.code
         FROM jsonb_to_recordset($1::jsonb) AS c(action text, code int)
        WHERE e.action = c.action`,
      [JSON.stringify(CODES.map(([action, code]) => ({ action, code })))],
    );
    // An action no release ever wrote cannot be here; 0 keeps such a row readable rather than failing the upgrade.
    await q.query('UPDATE audit_events SET code = 0 WHERE code IS NULL');
    await q.query('ALTER TABLE audit_events ENABLE TRIGGER audit_events_no_change');
    await q.query('ALTER TABLE audit_events ALTER COLUMN code SET NOT NULL');
    await q.query('CREATE INDEX audit_events_org_code_time_idx ON audit_events (org_id, code, occurred_at)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX audit_events_org_code_time_idx');
    await q.query('ALTER TABLE audit_events DROP COLUMN correlation_id, DROP COLUMN code');
  }
}
