import { AuditLog } from '@app/audit';
import { Clock, DataCipher, DomainError, IfMatch } from '@app/common';
import { AppConfig } from '@app/config';
import { ChangeFeed, Database } from '@app/persistence';
import { AuthenticatorPolicyRepository } from '../policies/authenticator-policy.repository';
import { PushGatewayRepository, PushGatewaySecretRow } from './push-gateway.repository';
import { PUSH_GATEWAY_SCHEMA } from './push-gateway.schema';
import { PushGatewayService } from './push-gateway.service';

/**
 * The replace race of DECISIONS 10, decided by the conditional write and not by the read before it:
 * the repository is made to lose the race after the If-Match check has passed.
 */
describe('PushGatewayService.replace when another writer wins the race', () => {
  const now = new Date('2030-01-01T00:00:00.000Z');
  const row = (version: number, hub: string): PushGatewaySecretRow => ({
    id: '5',
    org_id: 'acme',
    type: 'CLOUD_GCM_PUSH',
    name: 'Android',
    is_default: false,
    hub,
    notification_ttl_s: 60,
    supported_operating_systems: [],
    app_id: null,
    notes: 'kept',
    message_templates: {},
    created_at: now,
    updated_at: now,
    version,
    connectionString: null,
  });

  function service(reads: PushGatewaySecretRow[], updates: (PushGatewaySecretRow | undefined)[]) {
    const gateways = {
      findWithConnectionString: jest.fn(async () => reads.shift()),
      updateIfVersion: jest.fn(async () => updates.shift()),
    };
    const db = { transaction: async <T>(work: (tx: unknown) => Promise<T>) => work({}) } as unknown as Database;
    const audit = { record: jest.fn(async () => undefined) };
    const clock = { now: () => now } as Clock;
    const changes = { live: false, subscribe: () => undefined, publishOnCommit: jest.fn() };
    const subject = new PushGatewayService(
      db,
      gateways as unknown as PushGatewayRepository,
      {} as AuthenticatorPolicyRepository,
      new DataCipher([{ id: 'k', key: Buffer.alloc(32, 3) }]),
      audit as unknown as AuditLog,
      clock,
      changes as unknown as ChangeFeed,
      { push: { loopbackHubs: false } } as AppConfig,
    );
    return { subject, gateways, audit, changes };
  }
  const actor = { name: 'acme-admin', sourceAddress: '127.0.0.1' };
  const body = { schemas: [PUSH_GATEWAY_SCHEMA], hub: 'mine' };

  it('with If-Match naming the version read: 412, no retry, nothing audited', async () => {
    const { subject, gateways, audit, changes } = service([row(1, 'old'), row(2, 'theirs')], [undefined]);
    const error = await subject.replace('acme', '5', body, 1, IfMatch.parse('W/"1"'), actor).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe('PRECONDITION_FAILED');
    expect((error as DomainError).detail).toContain('its current version is 2');
    expect(gateways.updateIfVersion).toHaveBeenCalledTimes(1);
    expect(gateways.updateIfVersion).toHaveBeenCalledWith('acme', '5', 1, expect.objectContaining({ hub: 'mine' }), now, {});
    expect(audit.record).not.toHaveBeenCalled();
    expect(changes.publishOnCommit).not.toHaveBeenCalled();
  });

  it('without If-Match: merged again on the newer version, keeping what the other writer changed', async () => {
    const theirs = { ...row(2, 'theirs'), notes: 'their notes' };
    const { subject, gateways, audit, changes } = service([row(1, 'old'), theirs], [undefined, { ...theirs, hub: 'mine', version: 3 }]);
    const written = await subject.replace('acme', '5', body, 1, undefined, actor);
    expect(written.row.version).toBe(3);
    expect(gateways.updateIfVersion).toHaveBeenLastCalledWith('acme', '5', 2, expect.objectContaining({ hub: 'mine', notes: 'their notes' }), now, {});
    expect(audit.record).toHaveBeenCalledTimes(1);
    // Published once, with the write that won: every instance reads the tenant's gateways again.
    expect(changes.publishOnCommit).toHaveBeenCalledTimes(1);
    expect(changes.publishOnCommit).toHaveBeenCalledWith({}, 'gateway', ['acme']);
  });

  it('gives up with a 409 after repeated losses, and answers 404 when the gateway went away', async () => {
    const losing = service(
      Array.from({ length: 6 }, (_, i) => row(i + 1, 'x')),
      Array.from({ length: 5 }, () => undefined),
    );
    await expect(losing.subject.replace('acme', '5', body, 1, undefined, actor)).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(losing.gateways.updateIfVersion).toHaveBeenCalledTimes(5);

    const gone = service([row(1, 'x')], [undefined]);
    await expect(gone.subject.replace('acme', '5', body, 1, IfMatch.parse('W/"1"'), actor)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
