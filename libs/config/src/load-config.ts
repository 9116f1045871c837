import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import { AppConfig, JWKS_MAX_AGE_S } from './app-config';

export class ConfigurationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigurationError';
  }
}

const int = (fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER) => z.coerce.number().int().min(min).max(max).default(fallback);
const optionalText = z.string().trim().min(1).optional().catch(undefined);
const list = z
  .string()
  .default('')
  .transform((v) =>
    v
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );
const url = z.url({ protocol: /^https?$/ }).transform((u) => u.replace(/\/+$/, ''));

/**
 * The host list of a libpq multi-host URL (postgresql://h1,h2/db, or ?host=h1,h2), else undefined.
 * Read by hand: `new URL` takes "h1:5432,h2:5432" for a bad port, which is the "Invalid URL" an
 * operator saw at start (issue 34).
 */
function hostListOf(databaseUrl: string): string | undefined {
  const authority = /^[a-z]+:\/\/([^/?#]*)/i.exec(databaseUrl)?.[1] ?? '';
  const host = authority.slice(authority.lastIndexOf('@') + 1);
  if (host.includes(',')) return host;
  const query = /\?([^#]*)/.exec(databaseUrl)?.[1] ?? '';
  return new URLSearchParams(query).getAll('host').find((value) => value.includes(','));
}

/** Why a host list is refused and what to write instead (DECISIONS 13, deploy/README.md "PostgreSQL failover"). */
function severalHostsMessage(hosts: string): string {
  return (
    `names several hosts (${hosts}), which this service cannot use: node-postgres connects to one host and ignores ` +
    'target_session_attrs, so it would not find the primary after a failover. Give one host that always leads to the ' +
    'primary: postgresql://user:password@host:5432/database, where host is the read-write service of the cluster ' +
    '(CloudNativePG\'s <cluster>-rw) or a proxy in front of it (PgBouncer, HAProxy); see deploy/README.md, "PostgreSQL failover".'
  );
}

/** The environment schema: every variable the service reads, with its default. */
const schema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: int(8080, 0, 65535),
  WORKERS: int(1, 1, 64),
  HOST: z.string().default('0.0.0.0'),
  DATA_DIR: z.string().default('./.data'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .superRefine((value, context) => {
      const hosts = hostListOf(value);
      if (hosts !== undefined) context.addIssue({ code: 'custom', message: severalHostsMessage(hosts) });
    })
    .optional(),
  EMBEDDED_PG_PORT: int(54329, 1, 65535),
  EMBEDDED_PG_DIR: z.string().min(1).default('/var/lib/credential-platform'),
  EMBEDDED_PG_RESTART_TIMEOUT_S: int(60, 1, 86400),
  PUBLIC_BASE_URL: url.optional(),
  AUTH_BASE_URL: url.optional(),
  OIP_AUTH_BASE_URL: url.optional(),
  OIP_AUTH_HOSTS: list,
  PLATFORM_ADMIN_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  BOOTSTRAP_ORG_ID: z
    .string()
    .regex(/^[A-Za-z0-9_]{1,64}$/, 'must be 1-64 characters of A-Z, a-z, 0-9 and _')
    .optional(),
  BOOTSTRAP_CLIENT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  PLATFORM_ADMIN_USER: z
    .string()
    .regex(/^([A-Za-z0-9._@-]{1,128})?$/, 'must be a userName (1-128 characters of A-Z, a-z, 0-9, ".", "_", "@" and "-"), or empty for none')
    .default('admin'),
  ENROLMENT_LINK_LIFETIME_S: int(86400, 300, 2592000),
  SCOPE_ASSIGNMENT_FILE: z.string().optional(),
  PKCS11_MODULE: optionalText,
  PKCS11_TOKEN_LABEL: z.string().min(1).max(32).default('platform'),
  PKCS11_PIN: optionalText,
  PKCS11_PIN_FILE: optionalText,
  JWT_KEY_LABEL: z.string().min(1).default('JWT_KEY'),
  HSM_HEALTH_CHECK_INTERVAL_S: int(10, 0, 3600),
  ACCESS_TOKEN_LIFETIME_S: int(3600, 60, 86400),
  JWKS_PUBLICATION_DELAY_S: int(JWKS_MAX_AGE_S, 0, 86400),
  TOKEN_UNUSED_TIMEOUT_S: int(300, 1, 86400),
  ASSERTION_CLOCK_SKEW_S: int(30, 0, 600),
  BACKCHANNEL_POLL_INTERVAL_S: int(5, 1, 60),
  BACKCHANNEL_REQUEST_LIFETIME_S: int(300, 10, 600),
  BACKCHANNEL_LOOPBACK_PINGS: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  AUTH_FAILURE_LIMIT: int(10, 1, 100000),
  AUTH_FAILURE_WINDOW_S: int(300, 1, 86400),
  // Password hashes running at once per process (each scrypt holds a hash thread and 32 MiB).
  PASSWORD_HASH_CONCURRENCY: int(2, 1, 64),
  PASSWORD_HASH_QUEUE: int(16, 0, 10000),
  // How much the hash threads used while the service is busy lower their priority (nice -n; 0: never).
  PASSWORD_HASH_NICE: int(19, 0, 19),
  PASSWORD_FAILURE_BUDGET: int(1000, 1, 10000000),
  TRUSTED_PROXIES: list,
  CLIENT_CERTIFICATE_FROM_PROXY: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  SESSION_IDLE_TIMEOUT_S: int(900, 60, 86400),
  SESSION_ABSOLUTE_TIMEOUT_S: int(28800, 300, 604800),
  SECRET_LIFETIME_DAYS: int(1825, 1, 36500),
  CERTIFICATE_LIFETIME_DAYS: int(365, 1, 36500),
  PURGE_INTERVAL_S: int(300, 1, 86400),
  CONTENT_REQUEST_SWEEP_S: int(60, 1, 86400),
  // The audit log's hash chain and its signed checkpoints (DECISIONS 11.2).
  AUDIT_CHAIN_INTERVAL_MS: int(1000, 10, 60000),
  AUDIT_CHECKPOINT_EVENTS: int(1000, 1, 1000000),
  AUDIT_CHECKPOINT_INTERVAL_S: int(300, 1, 86400),
  AUDIT_KEY_LABEL: z.string().min(1).default('AUDIT_KEY'),
  // The audit event stream to SIEM destinations (DECISIONS 11.4): the outbox sender of each instance.
  AUDIT_STREAM_POLL_INTERVAL_MS: int(1000, 10, 60000),
  AUDIT_STREAM_BATCH_SIZE: int(100, 1, 1000),
  AUDIT_STREAM_SEND_TIMEOUT_MS: int(10000, 100, 120000),
  AUDIT_STREAM_LEASE_S: int(60, 1, 3600),
  AUDIT_STREAM_MAX_ATTEMPTS: int(12, 1, 100),
  AUDIT_STREAM_MAX_AGE_S: int(86400, 1, 2592000),
  AUDIT_STREAM_RETRY_BASE_MS: int(1000, 1, 3600000),
  AUDIT_STREAM_RETRY_MAX_MS: int(300000, 1, 86400000),
  AUDIT_STREAM_LOOPBACK: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  // Retention (DECISIONS 11.3): the least an organization may keep its events, and how often the retention job runs.
  AUDIT_RETENTION_MIN_DAYS: int(365, 1, 36500),
  AUDIT_RETENTION_INTERVAL_S: int(3600, 1, 86400),
  // Push delivery (DECISIONS 10.1): the outbox sender of each instance.
  PUSH_POLL_INTERVAL_MS: int(1000, 10, 60000),
  PUSH_BATCH_SIZE: int(100, 1, 1000),
  PUSH_CONCURRENCY: int(64, 1, 1000),
  PUSH_GATEWAY_CONCURRENCY: int(16, 1, 1000),
  PUSH_SEND_TIMEOUT_MS: int(10000, 100, 120000),
  PUSH_LEASE_S: int(60, 1, 3600),
  PUSH_MAX_ATTEMPTS: int(8, 1, 100),
  PUSH_RETRY_BASE_MS: int(1000, 1, 3600000),
  PUSH_RETRY_MAX_MS: int(300000, 1, 86400000),
  PUSH_BREAKER_FAILURES: int(5, 1, 1000),
  PUSH_BREAKER_COOLDOWN_MS: int(30000, 1, 3600000),
  PUSH_RETENTION_DAYS: int(30, 1, 3650),
  PUSH_LOOPBACK_HUBS: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  BOOTSTRAP_CA: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
  // At least 2: the change feed's LISTEN connection is one of the pool's for as long as the process runs.
  DATABASE_POOL_SIZE: int(20, 2, 1000),
  DATABASE_STRICT_TRANSACTIONS: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  SECRET_PEPPER: optionalText,
  DATA_ENCRYPTION_KEYS: optionalText,
  METRICS_PORT: int(9464, 0, 65535),
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  API_DOCS: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
  TLS_CERT_FILE: optionalText,
  TLS_KEY_FILE: optionalText,
  PORTAL_DIR: z.string().min(1).default('./portal/dist'),
});

/** Secrets the embedded default generates once into DATA_DIR (owner-only), never in production. */
interface GeneratedSecrets {
  secretPepper: string;
  dataEncryptionKey: string;
  pkcs11Pin: string;
  pkcs11SoPin: string;
  embeddedPostgresPassword: string;
}

/**
 * Validates the environment and fails fast with a message naming each wrong variable.
 * With NODE_ENV=production, SECRET_PEPPER, DATA_ENCRYPTION_KEYS and the HSM PIN must be configured;
 * otherwise missing ones are generated once into DATA_DIR/secrets.json (mode 0600) and reused.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): AppConfig {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${String(i.path[0])}: ${i.message}`);
    throw new ConfigurationError(`Invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  const e = parsed.data;
  const production = e.NODE_ENV === 'production';
  const dataDir = isAbsolute(e.DATA_DIR) ? e.DATA_DIR : resolve(cwd, e.DATA_DIR);

  const missingInProduction = [
    !e.SECRET_PEPPER && 'SECRET_PEPPER',
    !e.DATA_ENCRYPTION_KEYS && 'DATA_ENCRYPTION_KEYS',
    !e.PKCS11_MODULE && 'PKCS11_MODULE',
    !e.PKCS11_PIN && !e.PKCS11_PIN_FILE && 'PKCS11_PIN or PKCS11_PIN_FILE',
    !e.DATABASE_URL && 'DATABASE_URL',
  ].filter(Boolean);
  if (production && missingInProduction.length > 0) {
    throw new ConfigurationError(`NODE_ENV=production needs these set (no generated defaults in production): ${missingInProduction.join(', ')}.`);
  }
  if (e.PKCS11_MODULE && !e.PKCS11_PIN && !e.PKCS11_PIN_FILE) {
    throw new ConfigurationError('PKCS11_MODULE is set, so PKCS11_PIN or PKCS11_PIN_FILE must say the token PIN.');
  }
  if (Boolean(e.TLS_CERT_FILE) !== Boolean(e.TLS_KEY_FILE)) {
    throw new ConfigurationError('TLS_CERT_FILE and TLS_KEY_FILE go together: set both to serve HTTPS, or neither.');
  }

  const needsGenerated = !e.SECRET_PEPPER || !e.DATA_ENCRYPTION_KEYS || !e.PKCS11_MODULE || !e.DATABASE_URL;
  const generated = needsGenerated ? readOrCreateGeneratedSecrets(dataDir) : undefined;

  const config = new AppConfig();
  config.nodeEnv = e.NODE_ENV;
  config.port = e.PORT;
  config.workers = e.WORKERS;
  config.host = e.HOST;
  config.dataDir = dataDir;
  config.logLevel = e.LOG_LEVEL;
  config.databaseUrl = e.DATABASE_URL;
  config.databasePoolSize = e.DATABASE_POOL_SIZE;
  config.databaseStrictTransactions = e.DATABASE_STRICT_TRANSACTIONS;
  config.embeddedPostgresPort = e.EMBEDDED_PG_PORT;
  config.embeddedPostgresDir = resolve(cwd, e.EMBEDDED_PG_DIR);
  config.embeddedPostgresRestartTimeoutS = e.EMBEDDED_PG_RESTART_TIMEOUT_S;
  config.embeddedPostgresPassword = generated?.embeddedPostgresPassword;
  config.publicBaseUrl = e.PUBLIC_BASE_URL ?? `http://localhost:${e.PORT}`;
  config.authBaseUrl = e.AUTH_BASE_URL ?? config.publicBaseUrl;
  // The embedded default calls itself localhost; a newcomer may type 127.0.0.1 or [::1] (the same
  // listener), so those are the service's own origins too until PUBLIC_BASE_URL or AUTH_BASE_URL says otherwise.
  const loopbackAliases = !e.PUBLIC_BASE_URL && !e.AUTH_BASE_URL;
  config.authOrigins = ownOrigins(config.authBaseUrl, loopbackAliases);
  config.publicOrigins = ownOrigins(config.publicBaseUrl, loopbackAliases);
  config.oipAuthBaseUrl = e.OIP_AUTH_BASE_URL ?? `${config.authBaseUrl}/oip`;
  config.oipAuthHosts = e.OIP_AUTH_HOSTS.map((h) => h.toLowerCase());
  config.platformAdminSecret = e.PLATFORM_ADMIN_SECRET;
  config.bootstrapOrgId = e.BOOTSTRAP_ORG_ID;
  config.bootstrapClientSecret = e.BOOTSTRAP_CLIENT_SECRET;
  config.platformAdminUser = e.PLATFORM_ADMIN_USER || undefined;
  config.enrolmentLinkLifetimeS = e.ENROLMENT_LINK_LIFETIME_S;
  config.scopeAssignmentFile = e.SCOPE_ASSIGNMENT_FILE ? resolve(cwd, e.SCOPE_ASSIGNMENT_FILE) : shippedFile('ops/scopeAssignment.properties');
  config.hsm = {
    modulePath: e.PKCS11_MODULE,
    tokenLabel: e.PKCS11_TOKEN_LABEL,
    pin: e.PKCS11_PIN ?? (e.PKCS11_PIN_FILE ? readPinFile(e.PKCS11_PIN_FILE) : generated!.pkcs11Pin),
    keyLabel: e.JWT_KEY_LABEL,
    soPin: e.PKCS11_MODULE ? undefined : generated!.pkcs11SoPin,
    healthCheckIntervalS: e.HSM_HEALTH_CHECK_INTERVAL_S,
  };
  config.accessTokenLifetimeS = e.ACCESS_TOKEN_LIFETIME_S;
  config.jwksPublicationDelayS = e.JWKS_PUBLICATION_DELAY_S;
  config.tokenUnusedTimeoutS = e.TOKEN_UNUSED_TIMEOUT_S;
  config.assertionClockSkewS = e.ASSERTION_CLOCK_SKEW_S;
  config.backchannelPollIntervalS = e.BACKCHANNEL_POLL_INTERVAL_S;
  config.backchannelRequestLifetimeS = e.BACKCHANNEL_REQUEST_LIFETIME_S;
  config.backchannelLoopbackPings = e.BACKCHANNEL_LOOPBACK_PINGS;
  config.authFailureLimit = e.AUTH_FAILURE_LIMIT;
  config.authFailureWindowS = e.AUTH_FAILURE_WINDOW_S;
  config.passwordHashConcurrency = e.PASSWORD_HASH_CONCURRENCY;
  config.passwordHashQueue = e.PASSWORD_HASH_QUEUE;
  config.passwordHashNice = e.PASSWORD_HASH_NICE;
  config.passwordFailureBudget = e.PASSWORD_FAILURE_BUDGET;
  config.trustedProxies = e.TRUSTED_PROXIES;
  if (e.SESSION_IDLE_TIMEOUT_S > e.SESSION_ABSOLUTE_TIMEOUT_S) {
    throw new ConfigurationError('SESSION_IDLE_TIMEOUT_S must not exceed SESSION_ABSOLUTE_TIMEOUT_S: a session cannot idle longer than it may live.');
  }
  if (e.CLIENT_CERTIFICATE_FROM_PROXY && e.TRUSTED_PROXIES.length === 0) {
    throw new ConfigurationError('CLIENT_CERTIFICATE_FROM_PROXY=true needs TRUSTED_PROXIES: the X-Client-Certificate header is read only from those proxies.');
  }
  config.clientCertificateFromProxy = e.CLIENT_CERTIFICATE_FROM_PROXY;
  config.sessionIdleTimeoutS = e.SESSION_IDLE_TIMEOUT_S;
  config.sessionAbsoluteTimeoutS = e.SESSION_ABSOLUTE_TIMEOUT_S;
  config.secretLifetimeDays = e.SECRET_LIFETIME_DAYS;
  config.certificateLifetimeDays = e.CERTIFICATE_LIFETIME_DAYS;
  config.purgeIntervalS = e.PURGE_INTERVAL_S;
  config.contentRequestSweepS = e.CONTENT_REQUEST_SWEEP_S;
  config.auditChain = {
    intervalMs: e.AUDIT_CHAIN_INTERVAL_MS,
    checkpointEvents: e.AUDIT_CHECKPOINT_EVENTS,
    checkpointIntervalS: e.AUDIT_CHECKPOINT_INTERVAL_S,
    keyLabel: e.AUDIT_KEY_LABEL,
  };
  if (e.AUDIT_STREAM_RETRY_MAX_MS < e.AUDIT_STREAM_RETRY_BASE_MS)
    throw new ConfigurationError('AUDIT_STREAM_RETRY_MAX_MS must be at least AUDIT_STREAM_RETRY_BASE_MS.');
  if (e.AUDIT_STREAM_LEASE_S * 1000 <= e.AUDIT_STREAM_SEND_TIMEOUT_MS) {
    throw new ConfigurationError(
      'AUDIT_STREAM_LEASE_S must be longer than AUDIT_STREAM_SEND_TIMEOUT_MS, so that no send is still running when its row is taken again.',
    );
  }
  config.auditStream = {
    pollIntervalMs: e.AUDIT_STREAM_POLL_INTERVAL_MS,
    batchSize: e.AUDIT_STREAM_BATCH_SIZE,
    sendTimeoutMs: e.AUDIT_STREAM_SEND_TIMEOUT_MS,
    leaseS: e.AUDIT_STREAM_LEASE_S,
    maxAttempts: e.AUDIT_STREAM_MAX_ATTEMPTS,
    maxAgeS: e.AUDIT_STREAM_MAX_AGE_S,
    retryBaseMs: e.AUDIT_STREAM_RETRY_BASE_MS,
    retryMaxMs: e.AUDIT_STREAM_RETRY_MAX_MS,
    loopback: e.AUDIT_STREAM_LOOPBACK,
  };
  config.auditRetention = { minDays: e.AUDIT_RETENTION_MIN_DAYS, intervalS: e.AUDIT_RETENTION_INTERVAL_S };
  if (e.PUSH_RETRY_MAX_MS < e.PUSH_RETRY_BASE_MS) throw new ConfigurationError('PUSH_RETRY_MAX_MS must be at least PUSH_RETRY_BASE_MS.');
  if (e.PUSH_LEASE_S * 1000 <= e.PUSH_SEND_TIMEOUT_MS) {
    throw new ConfigurationError('PUSH_LEASE_S must be longer than PUSH_SEND_TIMEOUT_MS, so that no send is still running when its row is taken again.');
  }
  config.push = {
    pollIntervalMs: e.PUSH_POLL_INTERVAL_MS,
    batchSize: e.PUSH_BATCH_SIZE,
    concurrency: e.PUSH_CONCURRENCY,
    gatewayConcurrency: e.PUSH_GATEWAY_CONCURRENCY,
    sendTimeoutMs: e.PUSH_SEND_TIMEOUT_MS,
    leaseS: e.PUSH_LEASE_S,
    maxAttempts: e.PUSH_MAX_ATTEMPTS,
    retryBaseMs: e.PUSH_RETRY_BASE_MS,
    retryMaxMs: e.PUSH_RETRY_MAX_MS,
    breakerFailures: e.PUSH_BREAKER_FAILURES,
    breakerCooldownMs: e.PUSH_BREAKER_COOLDOWN_MS,
    loopbackHubs: e.PUSH_LOOPBACK_HUBS,
    retentionDays: e.PUSH_RETENTION_DAYS,
  };
  config.bootstrapCa = e.BOOTSTRAP_CA;
  config.secretPepper = parsePepper(e.SECRET_PEPPER ?? generated!.secretPepper);
  config.dataEncryptionKeys = parseKeyring(e.DATA_ENCRYPTION_KEYS ?? generated!.dataEncryptionKey);
  config.metricsPort = e.METRICS_PORT;
  config.metricsHost = e.METRICS_HOST;
  config.apiDocs = e.API_DOCS;
  config.tlsCertFile = e.TLS_CERT_FILE;
  config.tlsKeyFile = e.TLS_KEY_FILE;
  config.portalDir = isAbsolute(e.PORTAL_DIR) ? e.PORTAL_DIR : resolve(cwd, e.PORTAL_DIR);
  return config;
}

function readPinFile(path: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch (error) {
    throw new ConfigurationError(`PKCS11_PIN_FILE ${path} cannot be read: ${(error as Error).message}`);
  }
}

function parsePepper(value: string): Buffer {
  if (value.length < 32) throw new ConfigurationError('SECRET_PEPPER must be at least 32 characters (use 32 random bytes, base64).');
  return Buffer.from(value, 'utf8');
}

/** `DATA_ENCRYPTION_KEYS`: comma-separated `keyId:base64(32 bytes)`; the first one encrypts. */
export function parseKeyring(value: string): { id: string; key: Buffer }[] {
  const keys = value.split(',').map((entry, index) => {
    const match = /^([A-Za-z0-9_-]{1,32}):([A-Za-z0-9+/=_-]+)$/.exec(entry.trim());
    const key = match ? Buffer.from(match[2], 'base64') : Buffer.alloc(0);
    if (!match || key.length !== 32) {
      throw new ConfigurationError(`DATA_ENCRYPTION_KEYS entry ${index + 1} must be "keyId:<base64 of 32 random bytes>" (e.g. k2:$(openssl rand -base64 32)).`);
    }
    return { id: match[1], key };
  });
  if (new Set(keys.map((k) => k.id)).size !== keys.length) throw new ConfigurationError('DATA_ENCRYPTION_KEYS has a key id twice.');
  return keys;
}

function readOrCreateGeneratedSecrets(dataDir: string): GeneratedSecrets {
  const file = join(dataDir, 'secrets.json');
  if (existsSync(file)) {
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as GeneratedSecrets;
    } catch (error) {
      throw new ConfigurationError(`${file} is not readable JSON (${(error as Error).message}); restore it from backup, or configure the secrets explicitly.`);
    }
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o755 });
  const secrets: GeneratedSecrets = {
    secretPepper: randomBytes(32).toString('base64'),
    dataEncryptionKey: `k1:${randomBytes(32).toString('base64')}`,
    pkcs11Pin: randomBytes(12).toString('hex'),
    pkcs11SoPin: randomBytes(12).toString('hex'),
    embeddedPostgresPassword: randomBytes(18).toString('base64url'),
  };
  writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return secrets;
}

/** A file shipped in the repository, found from this module whether it runs from source or dist/. */
function shippedFile(relativePath: string): string {
  const candidates = [resolve(__dirname, '../../..', relativePath), resolve(__dirname, '../../../..', relativePath)];
  return candidates.find((path) => existsSync(path)) ?? candidates[0];
}

/** A base URL's origin, with its loopback aliases when `aliases` and it names localhost. */
function ownOrigins(baseUrl: string, aliases: boolean): string[] {
  const url = new URL(baseUrl);
  if (!aliases || url.hostname !== 'localhost') return [url.origin];
  return ['localhost', '127.0.0.1', '[::1]'].map((host) => {
    const alias = new URL(baseUrl);
    alias.hostname = host;
    return alias.origin;
  });
}
