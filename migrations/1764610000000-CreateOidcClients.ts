import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A system account's settings as an OpenID Connect client of the authorization code flow
 * (DECISIONS 15.1): its registered redirect and post-logout redirect URIs (exact strings), whether it
 * is public (PKCE only, no secret), first-party (no consent asked) and allowed refresh tokens. No row:
 * the account cannot use the flow. Owned by libs/accounts; it goes with its account.
 */
export class CreateOidcClients1764610000000 implements MigrationInterface {
  name = 'CreateOidcClients1764610000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE oidc_clients (
        account_id                 uuid PRIMARY KEY REFERENCES system_accounts(id) ON DELETE CASCADE,
        redirect_uris              text[] NOT NULL CHECK (cardinality(redirect_uris) BETWEEN 1 AND 20),
        post_logout_redirect_uris  text[] NOT NULL DEFAULT '{}' CHECK (cardinality(post_logout_redirect_uris) <= 20),
        public_client              boolean NOT NULL,
        first_party                boolean NOT NULL,
        refresh_tokens             boolean NOT NULL,
        created_at                 timestamptz NOT NULL,
        updated_at                 timestamptz NOT NULL,
        version                    integer NOT NULL DEFAULT 1
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE oidc_clients');
  }
}
