import { createHash, randomBytes } from 'node:crypto';
import TestAgent from 'supertest/lib/agent';

/** Helpers of the authorization code flow suites (DECISIONS 15). */

export interface OidcClientSettings {
  redirectUris: string[];
  postLogoutRedirectUris?: string[];
  publicClient?: boolean;
  firstParty?: boolean;
  refreshTokens?: boolean;
}

/** Sets up a system account for the authorization code flow through the admin API. */
export async function registerOidcClient(http: TestAgent, token: string, org: string, clientId: string, settings: OidcClientSettings) {
  const response = await http.put(`/admin/v1/organizations/${org}/system-accounts/${clientId}/oidc-client`).auth(token, { type: 'bearer' }).send(settings);
  if (response.status !== 200) throw new Error(`register OIDC client failed: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body as Record<string, unknown>;
}

/** A PKCE pair (RFC 7636): a fresh verifier and its S256 challenge. */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** The query of an authorization request, encoded; `entries` may repeat a name. */
export function authorizeQuery(entries: [string, string][]): string {
  const query = new URLSearchParams();
  for (const [name, value] of entries) query.append(name, value);
  return query.toString();
}
