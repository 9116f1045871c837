import { Injectable } from '@nestjs/common';
import { Actor, AuditLog, byActor } from '@app/audit';
import { Clock, DomainError, IfMatch, ScimSearch, notFound, parseBody, isUuid } from '@app/common';
import { Database } from '@app/persistence';
import { ContentRequestRepository } from '../content-requests/content-request.repository';
import { CredentialRepository } from '../credentials/credential.repository';
import { DevicePolicyRepository, DevicePolicyRow } from './device-policy.repository';
import { createDevicePolicySchema, patchDevicePolicySchema } from './device-policy.schema';

/**
 * Device policies (CREDENTIAL-MANAGEMENT.md "Resources", "Reference data"): written by administrators,
 * read and searched by Device Management and Help Desk. A policy that an open content request names,
 * or that a device shows (DECISIONS 8), is not deleted (409).
 */
@Injectable()
export class DevicePolicyService {
  constructor(
    private readonly db: Database,
    private readonly policies: DevicePolicyRepository,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
    private readonly requests: ContentRequestRepository,
    private readonly credentials: CredentialRepository,
  ) {}

  create(orgId: string, body: unknown, actor: Actor): Promise<DevicePolicyRow> {
    const input = parseBody(createDevicePolicySchema, body, 'device policy');
    return this.db.transaction(async (tx) => {
      const row = await this.policies.create(orgId, input, this.clock.now(), tx);
      await this.audit.record(
        { org: orgId, ...byActor(actor), action: 'device_policy.create', target: row.id, outcome: 'success', details: { name: row.name } },
        tx,
      );
      return row;
    });
  }

  async get(orgId: string, id: string): Promise<DevicePolicyRow> {
    const row = isUuid(id) ? await this.policies.find(orgId, id) : undefined;
    if (!row) throw policyNotFound(id);
    return row;
  }

  search(orgId: string, search: ScimSearch): Promise<{ rows: DevicePolicyRow[]; total: number }> {
    return this.policies.search(orgId, search);
  }

  /** `ifMatch`: the change applies only to that version (else 412), compared under the row lock. */
  update(orgId: string, id: string, body: unknown, actor: Actor, ifMatch?: IfMatch): Promise<DevicePolicyRow> {
    const changes = parseBody(patchDevicePolicySchema, body, 'device policy');
    return this.db.transaction(async (tx) => {
      if (ifMatch) {
        const current = isUuid(id) ? await this.policies.findForUpdate(orgId, id, tx) : undefined;
        if (!current) throw policyNotFound(id);
        ifMatch.assertMatches(`Device policy "${current.name}"`, current.version);
      }
      const row = isUuid(id) ? await this.policies.update(orgId, id, changes, this.clock.now(), tx) : undefined;
      if (!row) throw policyNotFound(id);
      await this.audit.record(
        {
          org: orgId,
          ...byActor(actor),
          action: 'device_policy.update',
          target: id,
          outcome: 'success',
          details: { name: row.name, changed: Object.keys(changes) },
        },
        tx,
      );
      return row;
    });
  }

  async delete(orgId: string, id: string, actor: Actor, ifMatch?: IfMatch): Promise<void> {
    await this.db.transaction(async (tx) => {
      // Under the row's update lock, a request being created with the policy (which share-locks it) has
      // committed before the count below, and one created later finds no policy. The count comes
      // before the delete, whose foreign key action clears the requests' reference.
      const row = isUuid(id) ? await this.policies.findForUpdate(orgId, id, tx) : undefined;
      if (!row) throw policyNotFound(id);
      ifMatch?.assertMatches(`Device policy "${row.name}"`, row.version);
      const open = await this.requests.countOpenWithPolicy(orgId, row.id, tx);
      if (open > 0) {
        throw new DomainError(
          'CONFLICT',
          `Device policy "${row.name}" is named by ${open} open content request${open === 1 ? '' : 's'}; cancel ${open === 1 ? 'it' : 'them'} or let ${open === 1 ? 'it' : 'them'} complete before deleting the policy.`,
        );
      }
      // A device starts showing the policy only in a sync session, which share-locks it as creation does.
      const devices = await this.credentials.countDevicesShowingPolicy(orgId, row.id, tx);
      if (devices > 0) {
        const them = devices === 1 ? 'it' : 'them';
        throw new DomainError(
          'CONFLICT',
          `Device policy "${row.name}" is the policy of ${devices} device${devices === 1 ? '' : 's'} issued under it; recycle ${them} or update ${them} to another policy before deleting the policy.`,
        );
      }
      await this.policies.delete(orgId, row.id, tx);
      await this.audit.record(
        { org: orgId, ...byActor(actor), action: 'device_policy.delete', target: id, outcome: 'success', details: { name: row.name } },
        tx,
      );
    });
  }
}

function policyNotFound(id: string) {
  return notFound(`Device policy ${id.slice(0, 64)} does not exist.`);
}
