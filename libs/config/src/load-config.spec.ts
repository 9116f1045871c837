import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigurationError, loadConfig, parseKeyring } from './load-config';

const key = (byte: number) => Buffer.alloc(32, byte).toString('base64');
const dataDir = () => mkdtempSync(join(tmpdir(), 'config-'));

describe('loadConfig (DECISIONS 13)', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({ DATA_DIR: dataDir() });
    expect(config).toMatchObject({
      port: 8080,
      // So the access log, written at info, is on unless a deployment turns it off (docs/decisions.md).
      logLevel: 'info',
      accessTokenLifetimeS: 3600,
      // The JWKS document's Cache-Control max-age (DECISIONS 12.1).
      jwksPublicationDelayS: 300,
      tokenUnusedTimeoutS: 300,
      assertionClockSkewS: 30,
      authFailureLimit: 10,
      authFailureWindowS: 300,
      passwordHashConcurrency: 2,
      passwordHashQueue: 16,
      passwordHashNice: 19,
      passwordFailureBudget: 1000,
      clientCertificateFromProxy: false,
      sessionIdleTimeoutS: 900,
      sessionAbsoluteTimeoutS: 28800,
      metricsPort: 9464,
      metricsHost: '127.0.0.1',
      publicBaseUrl: 'http://localhost:8080',
      authBaseUrl: 'http://localhost:8080',
      oipAuthBaseUrl: 'http://localhost:8080/oip',
      hsm: { keyLabel: 'JWT_KEY', tokenLabel: 'platform', healthCheckIntervalS: 10 },
      databaseStrictTransactions: false,
      embeddedPostgresRestartTimeoutS: 60,
    });
    expect(config.embeddedDatabase).toBe(true);
    expect(config.embeddedHsm).toBe(true);
  });

  it('the first administrator and enrolment links have their defaults (DECISIONS 11, 14.4); an empty PLATFORM_ADMIN_USER makes no person', () => {
    expect(loadConfig({ DATA_DIR: dataDir() })).toMatchObject({ platformAdminUser: 'admin', enrolmentLinkLifetimeS: 86400 });
    expect(loadConfig({ DATA_DIR: dataDir(), PLATFORM_ADMIN_USER: '' }).platformAdminUser).toBeUndefined();
    expect(() => loadConfig({ DATA_DIR: dataDir(), PLATFORM_ADMIN_USER: 'has space' })).toThrow(/PLATFORM_ADMIN_USER/);
    expect(() => loadConfig({ DATA_DIR: dataDir(), ENROLMENT_LINK_LIFETIME_S: '10' })).toThrow(/ENROLMENT_LINK_LIFETIME_S/);
  });

  it('the embedded default answers at localhost, 127.0.0.1 and [::1]; a configured base URL is the only origin (issue 33 item 3)', () => {
    const embedded = loadConfig({ DATA_DIR: dataDir(), PORT: '8443' });
    expect(embedded.authOrigins).toEqual(['http://localhost:8443', 'http://127.0.0.1:8443', 'http://[::1]:8443']);
    expect(embedded.publicOrigins).toEqual(embedded.authOrigins);
    const configured = loadConfig({ DATA_DIR: dataDir(), PUBLIC_BASE_URL: 'http://localhost:8080', AUTH_BASE_URL: 'https://auth.example.test/' });
    expect(configured.authOrigins).toEqual(['https://auth.example.test']);
    expect(configured.publicOrigins).toEqual(['http://localhost:8080']);
  });

  it('generates the embedded secrets once, owner-only, and reuses them', () => {
    const dir = dataDir();
    const first = loadConfig({ DATA_DIR: dir });
    expect(statSync(join(dir, 'secrets.json')).mode & 0o777).toBe(0o600);
    const second = loadConfig({ DATA_DIR: dir });
    expect(second.secretPepper.equals(first.secretPepper)).toBe(true);
    expect(second.hsm.pin).toBe(first.hsm.pin);
    expect(JSON.parse(readFileSync(join(dir, 'secrets.json'), 'utf8')).pkcs11Pin).toBe(first.hsm.pin);
  });

  it('in production refuses to start without configured secrets, an HSM and a database, naming them', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', DATA_DIR: dataDir() })).toThrow(
      'NODE_ENV=production needs these set (no generated defaults in production): SECRET_PEPPER, DATA_ENCRYPTION_KEYS, PKCS11_MODULE, PKCS11_PIN or PKCS11_PIN_FILE, DATABASE_URL.',
    );
    const complete = {
      NODE_ENV: 'production',
      DATA_DIR: dataDir(),
      SECRET_PEPPER: 'p'.repeat(40),
      DATA_ENCRYPTION_KEYS: `k1:${key(1)}`,
      PKCS11_MODULE: '/usr/lib/softhsm/libsofthsm2.so',
      PKCS11_PIN: '1234',
      DATABASE_URL: 'postgresql://db.example/platform',
    };
    expect(loadConfig(complete).embeddedDatabase).toBe(false);
  });

  it.each([
    [{ PORT: 'eighty' }, 'PORT'],
    [{ ACCESS_TOKEN_LIFETIME_S: '10' }, 'ACCESS_TOKEN_LIFETIME_S'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL: must be a postgres:// or postgresql:// URL'],
    [{ PLATFORM_ADMIN_SECRET: 'short' }, 'PLATFORM_ADMIN_SECRET: must be at least 32 characters'],
    [{ BOOTSTRAP_ORG_ID: 'has-hyphen' }, 'BOOTSTRAP_ORG_ID'],
    [{ HSM_HEALTH_CHECK_INTERVAL_S: '-5' }, 'HSM_HEALTH_CHECK_INTERVAL_S'],
    [{ EMBEDDED_PG_RESTART_TIMEOUT_S: '0' }, 'EMBEDDED_PG_RESTART_TIMEOUT_S'],
    [{ DATABASE_STRICT_TRANSACTIONS: 'yes' }, 'DATABASE_STRICT_TRANSACTIONS'],
    [{ DATABASE_POOL_SIZE: '1' }, 'DATABASE_POOL_SIZE: Too small: expected number to be >=2'],
    [{ PASSWORD_HASH_CONCURRENCY: '0' }, 'PASSWORD_HASH_CONCURRENCY: Too small: expected number to be >=1'],
    [{ PASSWORD_HASH_QUEUE: 'many' }, 'PASSWORD_HASH_QUEUE'],
    [{ PASSWORD_FAILURE_BUDGET: '0' }, 'PASSWORD_FAILURE_BUDGET: Too small: expected number to be >=1'],
    [{ CLIENT_CERTIFICATE_FROM_PROXY: 'true' }, 'CLIENT_CERTIFICATE_FROM_PROXY=true needs TRUSTED_PROXIES'],
    [{ CLIENT_CERTIFICATE_FROM_PROXY: 'yes' }, 'CLIENT_CERTIFICATE_FROM_PROXY'],
    [{ SESSION_IDLE_TIMEOUT_S: '30' }, 'SESSION_IDLE_TIMEOUT_S: Too small: expected number to be >=60'],
    [{ SESSION_IDLE_TIMEOUT_S: '3600', SESSION_ABSOLUTE_TIMEOUT_S: '1800' }, 'SESSION_IDLE_TIMEOUT_S must not exceed SESSION_ABSOLUTE_TIMEOUT_S'],
    [{ PKCS11_MODULE: '/lib/hsm.so' }, 'PKCS11_MODULE is set, so PKCS11_PIN or PKCS11_PIN_FILE must say the token PIN.'],
    [{ TLS_CERT_FILE: '/etc/tls/cert.pem' }, 'TLS_CERT_FILE and TLS_KEY_FILE go together'],
    [{ SECRET_PEPPER: 'too short' }, 'SECRET_PEPPER must be at least 32 characters'],
    [{ DATA_ENCRYPTION_KEYS: 'k1:notbase64ofthirtytwobytes' }, 'DATA_ENCRYPTION_KEYS entry 1 must be "keyId:<base64 of 32 random bytes>"'],
  ])('refuses %j, naming the variable', (env, message) => {
    expect(() => loadConfig({ DATA_DIR: dataDir(), ...env })).toThrow(ConfigurationError);
    expect(() => loadConfig({ DATA_DIR: dataDir(), ...env })).toThrow(message);
  });

  it.each([
    ['postgresql://app@db1,db2/platform?target_session_attrs=read-write', 'db1,db2'],
    ['postgresql://app:secret@db1:5432,db2:5433/platform', 'db1:5432,db2:5433'],
    ['postgres:///platform?host=db1,db2', 'db1,db2'],
  ])('refuses the several-host DATABASE_URL %s, naming the form it takes and why (issue 34)', (url, hosts) => {
    const load = () => loadConfig({ DATA_DIR: dataDir(), DATABASE_URL: url });
    expect(load).toThrow(ConfigurationError);
    expect(load).toThrow(
      `DATABASE_URL: names several hosts (${hosts}), which this service cannot use: node-postgres connects to one host and ignores target_session_attrs, so it would not find the primary after a failover. Give one host that always leads to the primary: postgresql://user:password@host:5432/database, where host is the read-write service of the cluster (CloudNativePG's <cluster>-rw) or a proxy in front of it (PgBouncer, HAProxy); see deploy/README.md, "PostgreSQL failover".`,
    );
    // The password of the URL is not repeated in the message.
    expect(load).not.toThrow(/secret/);
  });

  it('takes a one-host DATABASE_URL with a comma elsewhere (a password, an option)', () => {
    const url = 'postgresql://app:pa,ss@db-rw:5432/platform?options=-c%20search_path%3Da,b';
    expect(loadConfig({ DATA_DIR: dataDir(), DATABASE_URL: url }).databaseUrl).toBe(url);
  });

  it('reads a keyring whose first key encrypts, and refuses a key id twice', () => {
    expect(parseKeyring(`new:${key(2)},old:${key(1)}`).map((k) => k.id)).toEqual(['new', 'old']);
    expect(() => parseKeyring(`k:${key(2)},k:${key(1)}`)).toThrow('DATA_ENCRYPTION_KEYS has a key id twice.');
  });
});
