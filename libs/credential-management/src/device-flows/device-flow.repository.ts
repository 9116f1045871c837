import { Injectable } from '@nestjs/common';
import { Database, Transaction } from '@app/persistence';
import { DeviceFlowStatus, DeviceFlowStep, DeviceFlowType } from './device-flow.schema';

/** A response kept with its flow: COLLECT_DATA and PRINT outputs, ENCODE results (without CSRs). */
export interface StoredResponse {
  step: DeviceFlowStep;
  name: string;
  output: string;
}

export interface DeviceFlowRow {
  id: string;
  org_id: string;
  type: DeviceFlowType;
  status: DeviceFlowStatus;
  steps: DeviceFlowStep[];
  current_step: DeviceFlowStep | null;
  wallet_id: string;
  device_id: string;
  old_device_id: string | null;
  content_request_id: string;
  printer_id: string | null;
  responses: StoredResponse[];
  started_by: string;
  created_at: Date;
  updated_at: Date;
  version: number;
}

/** Device flows: the steps of a desk issuance over its content request. */
@Injectable()
export class DeviceFlowRepository {
  constructor(private readonly db: Database) {}

  async insert(row: Omit<DeviceFlowRow, 'updated_at' | 'version' | 'responses'>, tx: Transaction): Promise<void> {
    await this.db.query(
      `INSERT INTO device_flows (id, org_id, type, status, steps, current_step, wallet_id, device_id, old_device_id, content_request_id, printer_id,
                                 started_by, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13)`,
      [
        row.id,
        row.org_id,
        row.type,
        row.status,
        row.steps,
        row.current_step,
        row.wallet_id,
        row.device_id,
        row.old_device_id,
        row.content_request_id,
        row.printer_id,
        row.started_by,
        row.created_at,
      ],
      tx,
    );
  }

  async find(orgId: string, id: string, tx?: Transaction, lock = false): Promise<DeviceFlowRow | undefined> {
    const [row] = await this.db.query<DeviceFlowRow>(`SELECT * FROM device_flows WHERE org_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`, [orgId, id], tx);
    return row;
  }

  /** The flow's next state: its status, its current step (null once it ended) and the responses it gained. */
  async advance(
    orgId: string,
    id: string,
    change: { status: DeviceFlowStatus; currentStep: DeviceFlowStep | null; responses: StoredResponse[]; now: Date },
    tx: Transaction,
  ): Promise<void> {
    await this.db.query(
      `UPDATE device_flows SET status = $3, current_step = $4, responses = responses || $5::jsonb, updated_at = $6, version = version + 1
        WHERE org_id = $1 AND id = $2`,
      [orgId, id, change.status, change.currentStep, JSON.stringify(change.responses), change.now],
      tx,
    );
  }
}
