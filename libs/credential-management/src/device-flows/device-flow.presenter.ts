import { CANONICAL_PREFIX, isoTimestamp } from '@app/common';
import { SyncSessionPresenter } from '../sync-sessions/sync-session.presenter';
import { DEVICE_FLOW_SCHEMA } from './device-flow.schema';
import { DeviceFlowView } from './device-flow.service';

/** The DeviceFlow resource (CREDENTIAL-MANAGEMENT.md "Resources"), with the current step's operations; after ENCODE, the sync session's answer. */
export class DeviceFlowPresenter {
  private readonly sessions: SyncSessionPresenter;

  constructor(private readonly baseUrl: string) {
    this.sessions = new SyncSessionPresenter(baseUrl);
  }

  location(id: string): string {
    return `${this.baseUrl}${CANONICAL_PREFIX}/DeviceFlow/${id}`;
  }

  flow({ row, request, operations, session }: DeviceFlowView) {
    return {
      schemas: [DEVICE_FLOW_SCHEMA],
      id: row.id,
      type: row.type,
      status: row.status,
      steps: row.steps,
      ...(row.current_step ? { currentStep: row.current_step } : {}),
      wallet: { value: row.wallet_id, $ref: `${this.baseUrl}${CANONICAL_PREFIX}/Wallet/${row.wallet_id}`, type: 'Wallet' },
      device: { value: row.device_id, $ref: `${this.baseUrl}${CANONICAL_PREFIX}/Device/${row.device_id}`, type: 'Device' },
      contentRequest: {
        value: request.id,
        status: request.status,
        $ref: `${this.baseUrl}${CANONICAL_PREFIX}/ContentRequest/${request.id}`,
        type: 'ContentRequest',
      },
      responses: row.responses,
      operations,
      ...(session ? { syncSession: this.sessions.session(session) } : {}),
      meta: {
        resourceType: 'DeviceFlow',
        created: isoTimestamp(row.created_at),
        lastModified: isoTimestamp(row.updated_at),
        location: this.location(row.id),
        version: String(row.version),
      },
    };
  }
}
