import { CANONICAL_PREFIX, isoTimestamp } from '@app/common';
import { POLICY_RESOURCES } from './policy.schema';
import { PolicyView } from './policy.service';

/**
 * CredentialPolicy/global and WalletPolicy/global, on the SCIM routes and the admin API alike (one
 * resource, so one shape and one location: its SCIM path). While the defaults apply, meta.version is
 * "0" and there is no created/lastModified: nobody has written the policy yet.
 */
export class PolicyPresenter {
  constructor(private readonly baseUrl: string) {}

  policy(view: PolicyView) {
    const { resourceType, schema } = POLICY_RESOURCES[view.kind];
    return {
      schemas: [schema],
      id: 'global',
      ...view.policy,
      meta: {
        resourceType,
        ...(view.row ? { created: isoTimestamp(view.row.created_at), lastModified: isoTimestamp(view.row.updated_at) } : {}),
        location: `${this.baseUrl}${CANONICAL_PREFIX}/${resourceType}/global`,
        version: String(view.row?.version ?? 0),
      },
    };
  }
}
