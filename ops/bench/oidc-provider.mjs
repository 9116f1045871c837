// The reference for `npm run bench:oidc`: oidc-provider (the certified OpenID Connect server for
// Node), client_credentials with client_secret_post and a JWT access token signed ES256 with a key in
// its own memory (the platform signs in SoftHSM2). Usage:
//   node ops/bench/oidc-provider.mjs <port> <client secret> <same-work|bare>
// prints "ready" once listening.
// - same-work: the work the contract asks of a token (DECISIONS 3.4) done oidc-provider's way: a
//   post-middleware on the token endpoint signs an id_token beside the access token (its
//   client_credentials grant issues none) with the provider's IdToken model and the same key, and
//   stores one row per token with one INSERT into PostgreSQL (the PG* environment variables name it;
//   the table `issued_tokens` must exist). Two ES256 signatures and one row, as the platform.
// - bare: oidc-provider as it comes: one signature (the access token), nothing stored.
import process from 'node:process';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';
import pg from 'pg';

const [port, secret, mode] = process.argv.slice(2);
if (mode !== 'same-work' && mode !== 'bare') throw new Error(`mode must be same-work or bare, not ${mode}`);

const { privateKey } = await generateKeyPair('ES256', { extractable: true });
const provider = new Provider(`http://127.0.0.1:${port}`, {
  clients: [
    {
      client_id: 'bench',
      client_secret: secret,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_post',
      id_token_signed_response_alg: 'ES256',
    },
  ],
  jwks: { keys: [{ ...(await exportJWK(privateKey)), alg: 'ES256', use: 'sig', kid: 'bench' }] },
  scopes: ['api'],
  features: {
    clientCredentials: { enabled: true },
    devInteractions: { enabled: false },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => 'urn:bench:api',
      getResourceServerInfo: () => ({ scope: 'api', accessTokenFormat: 'jwt', accessTokenTTL: 3600, jwt: { sign: { alg: 'ES256' } } }),
    },
  },
});

if (mode === 'same-work') {
  // As many connections as the platform's pool (DATABASE_POOL_SIZE default).
  const pool = new pg.Pool({ max: 20 });
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.oidc?.route !== 'token' || ctx.status !== 200) return;
    const token = ctx.oidc.entities.ClientCredentials;
    const issuedAt = Math.floor(Date.now() / 1000);
    const expiresAt = issuedAt + token.expiration;
    const idToken = new provider.IdToken({ sub: token.clientId }, { ctx });
    idToken.scope = 'openid';
    ctx.body.id_token = await idToken.issue({ use: 'idtoken', expiresAt });
    await pool.query('INSERT INTO issued_tokens (jti, client_id, issued_at, expires_at) VALUES ($1, $2, to_timestamp($3), to_timestamp($4))', [
      token.jti,
      token.clientId,
      issuedAt,
      expiresAt,
    ]);
  });
}

provider.listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\n'));
