import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { TestApp } from './test-app';

/**
 * An authenticator stored directly (the registration itself is test/authenticators.e2e-spec.ts's
 * subject): a fresh P-256 key, the operating system and push handle given. Answers its id.
 */
export async function insertAuthenticator(
  t: Pick<TestApp, 'db' | 'clock'>,
  org: string,
  userId: string,
  options: { operatingSystem?: string; pushHandle?: string; displayName?: string } = {},
): Promise<string> {
  const id = randomUUID();
  const jwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
  const now = t.clock.now();
  await t.db.query(
    `INSERT INTO authenticators (id, org_id, user_id, display_name, operating_system, push_handle, public_key, thumbprint, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
    [
      id,
      org,
      userId,
      options.displayName ?? 'Test phone',
      options.operatingSystem ?? 'Android',
      options.pushHandle ?? `handle-${id}`,
      JSON.stringify({ kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y }),
      `thumbprint-${id}`,
      now,
    ],
  );
  return id;
}
