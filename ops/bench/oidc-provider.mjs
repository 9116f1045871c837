// The reference for `npm run bench:oidc`: oidc-provider (the certified OpenID Connect server for
// Node) issuing the same kind of token as the platform, client_credentials with client_secret_post
// and a JWT access token signed ES256 (an in-process key; the platform signs in SoftHSM2). Usage:
// node ops/bench/oidc-provider.mjs <port> <client secret> [jwt|opaque]; prints "ready" once listening.
// `opaque` issues opaque tokens kept in oidc-provider's in-memory store (closer to the platform,
// which records every token for introspection and revocation); `jwt` (default) keeps nothing.
import process from 'node:process';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

const [port, secret, format = 'jwt'] = process.argv.slice(2);
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
      getResourceServerInfo: () => ({ scope: 'api', accessTokenFormat: format, accessTokenTTL: 3600, jwt: { sign: { alg: 'ES256' } } }),
    },
  },
});
provider.listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\n'));
