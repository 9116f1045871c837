import { Injectable } from '@nestjs/common';
import { Database, Transaction } from '@app/persistence';
import { EnrollmentAttribute } from './enrollment-data.schema';

export interface EnrollmentDataRow {
  user_id: string;
  org_id: string;
  attributes: EnrollmentAttribute[];
  created_at: Date;
  updated_at: Date;
  version: number;
}

/** A user's enrollment data: one document per user, replaced as a whole, gone with the user. */
@Injectable()
export class EnrollmentDataRepository {
  constructor(private readonly db: Database) {}

  async replace(orgId: string, userId: string, attributes: EnrollmentAttribute[], now: Date, tx: Transaction): Promise<EnrollmentDataRow> {
    const [row] = await this.db.query<EnrollmentDataRow>(
      `INSERT INTO enrollment_data (user_id, org_id, attributes, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
       ON CONFLICT (user_id) DO UPDATE SET attributes = EXCLUDED.attributes, updated_at = EXCLUDED.updated_at, version = enrollment_data.version + 1
       RETURNING *`,
      [userId, orgId, JSON.stringify(attributes), now],
      tx,
    );
    return row;
  }

  async find(orgId: string, userId: string, tx?: Transaction): Promise<EnrollmentDataRow | undefined> {
    const [row] = await this.db.query<EnrollmentDataRow>('SELECT * FROM enrollment_data WHERE org_id = $1 AND user_id = $2', [orgId, userId], tx);
    return row;
  }
}
