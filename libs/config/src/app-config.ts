/** How long relying parties may cache the JWKS document (its `Cache-Control: max-age`). */
export const JWKS_MAX_AGE_S = 300;

/**
 * The validated configuration of one process. Built once by loadConfig() from the environment;
 * nobody else reads process.env. Field names follow DECISIONS 13.
 */
export class AppConfig {
  nodeEnv!: 'development' | 'production' | 'test';
  port!: number;
  /** Service processes sharing the port (Node runs one thread per process); 1 means no cluster. */
  workers!: number;
  host!: string;
  dataDir!: string;
  logLevel!: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

  /** PostgreSQL connection string; undefined means the embedded PostgreSQL under dataDir. */
  databaseUrl?: string;
  embeddedPostgresPort!: number;
  /** As root: where the embedded PostgreSQL's cluster and binaries go when the `postgres` user cannot reach them in place. */
  embeddedPostgresDir!: string;
  embeddedPostgresPassword?: string;
  /** How long the embedded PostgreSQL may fail to start again after it died before liveness turns red. */
  embeddedPostgresRestartTimeoutS!: number;

  publicBaseUrl!: string;
  authBaseUrl!: string;
  oipAuthBaseUrl!: string;
  oipAuthHosts!: string[];

  /**
   * The origins a browser's form or call may come from: AUTH_BASE_URL's (and PUBLIC_BASE_URL's) own,
   * plus 127.0.0.1 and [::1] in the embedded default, where neither is set and the service calls
   * itself localhost (DECISIONS 14.3, 11.1).
   */
  authOrigins!: string[];
  publicOrigins!: string[];

  platformAdminSecret?: string;
  /** The platform administrator person made at first start (PLATFORM_ADMIN_USER, default `admin`; empty: none; DECISIONS 11). */
  platformAdminUser?: string;
  /** How long an enrolment link works (ENROLMENT_LINK_LIFETIME_S, default 86400; DECISIONS 14.4). */
  enrolmentLinkLifetimeS!: number;
  bootstrapOrgId?: string;
  bootstrapClientSecret?: string;

  scopeAssignmentFile!: string;

  hsm!: {
    /** Undefined: the embedded SoftHSM2 token provisioned under dataDir/softhsm. */
    modulePath?: string;
    tokenLabel: string;
    pin: string;
    keyLabel: string;
    /** Only for the embedded token. */
    soPin?: string;
    /** A probe sign after this long without a sign; 0: none (readiness then changes only when a sign fails). */
    healthCheckIntervalS: number;
  };

  accessTokenLifetimeS!: number;
  /**
   * How long a new token-signing key is published in JWKS before it may sign (JWKS_PUBLICATION_DELAY_S,
   * default JWKS_MAX_AGE_S): a relying party's cached JWKS has then seen it (DECISIONS 12.1).
   */
  jwksPublicationDelayS!: number;
  tokenUnusedTimeoutS!: number;
  assertionClockSkewS!: number;
  /** CIBA `interval`: the least time between two polls of one request (BACKCHANNEL_POLL_INTERVAL_S, default 5; DECISIONS 16). */
  backchannelPollIntervalS!: number;
  /** CIBA `expires_in` when the client asks for none, and the most it may ask for (BACKCHANNEL_REQUEST_LIFETIME_S, default 300; DECISIONS 16). */
  backchannelRequestLifetimeS!: number;
  /**
   * Whether a CIBA client's notification endpoint may be a loopback address (BACKCHANNEL_LOOPBACK_PINGS,
   * default false: tests, a client on the same machine); private and link-local ones never (DECISIONS 16).
   */
  backchannelLoopbackPings!: boolean;
  authFailureLimit!: number;
  authFailureWindowS!: number;
  /** Password hashes (scrypt) one process runs at once (PASSWORD_HASH_CONCURRENCY, default 2). */
  passwordHashConcurrency!: number;
  /** Password checks that may wait for one of those (PASSWORD_HASH_QUEUE, default 16); beyond: 503. */
  passwordHashQueue!: number;
  /**
   * What is added to the nice value (at most to 19) of the password hash threads used while the
   * service's main thread is busy with other requests (PASSWORD_HASH_NICE, 0-19, default 19; 0:
   * hashes never yield).
   */
  passwordHashNice!: number;
  /**
   * Failed password checks an organization may have per AUTH_FAILURE_WINDOW_S before its password
   * grant answers 429 until the window passes (PASSWORD_FAILURE_BUDGET, default 1000; DECISIONS 4).
   */
  passwordFailureBudget!: number;
  trustedProxies!: string[];
  /**
   * Whether a smart card's certificate forwarded by a TRUSTED_PROXIES peer in X-Client-Certificate is
   * read (CLIENT_CERTIFICATE_FROM_PROXY, default false; DECISIONS 14.1). Off unless the proxy sets the
   * header itself and drops any a client sent: a certificate is public, so a forwarded one is only
   * as good as the proxy's TLS handshake that proved its key.
   */
  clientCertificateFromProxy!: boolean;
  /** A person's browser session ends after this long without a request (SESSION_IDLE_TIMEOUT_S, default 900; DECISIONS 14.2). */
  sessionIdleTimeoutS!: number;
  /** ...and this long after sign-in, whatever its use (SESSION_ABSOLUTE_TIMEOUT_S, default 28800). */
  sessionAbsoluteTimeoutS!: number;
  secretLifetimeDays!: number;
  certificateLifetimeDays!: number;
  purgeIntervalS!: number;
  /** How often open content requests past their expiresAt are expired and their devices released. */
  contentRequestSweepS!: number;
  /**
   * The audit log's hash chain (DECISIONS 11.2): how often each instance offers to chain new events
   * (AUDIT_CHAIN_INTERVAL_MS), and when a chain's head is signed: after AUDIT_CHECKPOINT_EVENTS new
   * events or AUDIT_CHECKPOINT_INTERVAL_S seconds, whichever comes first, with the HSM key AUDIT_KEY_LABEL.
   */
  auditChain!: { intervalMs: number; checkpointEvents: number; checkpointIntervalS: number; keyLabel: string };
  /**
   * Retention of the audit log (DECISIONS 11.3): the floor an organization's `auditRetentionDays` may
   * not go below (AUDIT_RETENTION_MIN_DAYS, default 365), and how often each instance offers the
   * retention job (AUDIT_RETENTION_INTERVAL_S, default 3600; one instance at a time runs it).
   */
  auditRetention!: { minDays: number; intervalS: number };
  /** The push outbox sender (DECISIONS 10.1; PUSH_* variables). */
  push!: PushDeliveryConfig;
  /** The audit event stream's outbox sender (DECISIONS 11.4; AUDIT_STREAM_* variables). */
  auditStream!: AuditStreamConfig;
  /**
   * Connections each service process keeps to PostgreSQL, the change feed's LISTEN connection among
   * them (DATABASE_POOL_SIZE, default 20). A deployment needs instances x WORKERS x this within the
   * server's max_connections.
   */
  databasePoolSize!: number;
  /**
   * A statement sent to the pool from inside a transaction's work throws instead of running
   * (DATABASE_STRICT_TRANSACTIONS, default false; the test suite turns it on): libs/persistence Database.
   */
  databaseStrictTransactions!: boolean;
  /** Give the bootstrap organizations (`platform` and BOOTSTRAP_ORG_ID's) a self-signed CA on first start (BOOTSTRAP_CA, default true). */
  bootstrapCa!: boolean;

  /** Key of the HMAC that stores client secrets (DECISIONS 4). */
  secretPepper!: Buffer;
  /** AES-256-GCM keyring; the first key encrypts, all decrypt (DECISIONS 10). */
  dataEncryptionKeys!: { id: string; key: Buffer }[];

  metricsPort!: number;
  /**
   * Address the metrics listener binds (METRICS_HOST, default 127.0.0.1): loopback unless a scraper
   * in another container or host needs it, then 0.0.0.0 (the Kubernetes manifests do; DECISIONS 1).
   */
  metricsHost!: string;
  apiDocs!: boolean;
  tlsCertFile?: string;
  tlsKeyFile?: string;
  /** The management portal's build (`vite build` of portal/), served at /portal/ (DECISIONS 17). */
  portalDir!: string;

  get embeddedDatabase(): boolean {
    return this.databaseUrl === undefined;
  }

  get embeddedHsm(): boolean {
    return this.hsm.modulePath === undefined;
  }
}

/** The audit event stream's sender (DECISIONS 11.4); README's table describes each AUDIT_STREAM_* variable. */
export interface AuditStreamConfig {
  /** How often each instance looks for due deliveries (an event committed on this instance wakes it at once). */
  pollIntervalMs: number;
  /** Rows claimed at most per claim statement (also the deliveries in flight per instance). */
  batchSize: number;
  sendTimeoutMs: number;
  /** How long a claimed row stays with its sender before any sender may take it again. */
  leaseS: number;
  /** Attempts before a delivery is dead-lettered... */
  maxAttempts: number;
  /** ...or this long after its event, whichever comes first. */
  maxAgeS: number;
  retryBaseMs: number;
  retryMaxMs: number;
  /** Destinations on loopback allowed (AUDIT_STREAM_LOOPBACK; tests, a relay on the same machine). */
  loopback: boolean;
}

/** The push outbox sender's settings (DECISIONS 10.1); README's table describes each PUSH_* variable. */
export interface PushDeliveryConfig {
  /** How often each instance looks for due notifications (a commit on this instance wakes it at once). */
  pollIntervalMs: number;
  /** Rows claimed at most per claim statement. */
  batchSize: number;
  /** Sends in flight at once per instance, across gateways. */
  concurrency: number;
  /** Sends in flight at once per gateway, so one slow hub holds only its share. */
  gatewayConcurrency: number;
  sendTimeoutMs: number;
  /** How long a claimed row stays with its sender before any sender may take it again. */
  leaseS: number;
  /** Attempts before a notification is dead-lettered. */
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  /** Consecutive failures of a gateway that open its circuit. */
  breakerFailures: number;
  breakerCooldownMs: number;
  /** How long settled notifications stay for the administrators' view before they are deleted. */
  retentionDays: number;
  /** Whether a gateway endpoint may be a loopback address, reached over plain http (tests, a local relay; DECISIONS 10.2). */
  loopbackHubs: boolean;
}
