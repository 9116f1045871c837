import { Injectable } from '@nestjs/common';
import { AccountDependents } from '../account-dependents';
import { UserRow } from '../users/user.repository';
import { AdminPresenter } from './admin.presenter';

/**
 * Users as the administration answers them, the admin API and the command line alike: each with
 * its `lastSignIn` (DECISIONS 17.2), read through the auth library's port in one lookup per page.
 */
@Injectable()
export class UserViews {
  constructor(
    private readonly presenter: AdminPresenter,
    private readonly dependents: AccountDependents,
  ) {}

  async many(orgId: string, rows: readonly UserRow[]) {
    const lastSignIns = await this.dependents.lastSignIns(
      orgId,
      rows.map((row) => row.id),
    );
    return rows.map((row) => this.presenter.user(row, lastSignIns.get(row.id) ?? null));
  }

  async one(row: UserRow) {
    const [view] = await this.many(row.org_id, [row]);
    return view;
  }
}
