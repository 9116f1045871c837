import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = join(__dirname, '..');

/** Each table has one owner: the library whose SQL creates, changes and reads it (docs/decisions.md, "Table ownership"). */
const OWNERS: Record<string, string> = {
  organizations: 'accounts',
  system_accounts: 'accounts',
  client_secrets: 'accounts',
  client_certificates: 'accounts',
  users: 'accounts',
  user_certificates: 'accounts',
  enrolment_links: 'accounts',
  certified_applications: 'accounts',
  oidc_clients: 'accounts',
  access_tokens: 'auth',
  assertion_jtis: 'auth',
  user_assertion_jtis: 'auth',
  auth_failures: 'auth',
  signing_keys: 'auth',
  sign_in_sessions: 'auth',
  authorization_grants: 'auth',
  refresh_tokens: 'auth',
  backchannel_requests: 'auth',
  audit_events: 'audit',
  audit_chain_heads: 'audit',
  audit_checkpoints: 'audit',
  push_delivery_gateways: 'delivery-gateway',
  authenticator_policies: 'delivery-gateway',
  authenticator_policy_gateways: 'delivery-gateway',
  authenticators: 'delivery-gateway',
  authenticator_challenges: 'delivery-gateway',
  push_outbox: 'delivery-gateway',
  devices: 'device',
  device_external_ids: 'device',
  certification_authorities: 'pki',
  issued_certificates: 'pki',
  published_crls: 'pki',
  ca_generations: 'pki',
  wallets: 'credential-management',
  user_groups: 'credential-management',
  device_policies: 'credential-management',
  printers: 'credential-management',
  organization_policies: 'credential-management',
  enrollment_data: 'credential-management',
  content_requests: 'credential-management',
  credentials: 'credential-management',
  sync_sessions: 'credential-management',
  device_flows: 'credential-management',
  passkeys: 'credential-management',
  webauthn_challenges: 'auth',
};

/**
 * Reviewed exceptions: SQL of one library on another's tables, each for a measured reason. Everything
 * else asks the owner through a port (AccountDependents, the libraries' exported services).
 */
const REVIEWED: Record<string, { tables: string[]; reason: string }> = {
  'libs/auth/src/tokens/token.repository.ts': {
    tables: ['organizations', 'system_accounts', 'users', 'client_secrets'],
    reason:
      "the bearer check reads a token's live subject and organization policy in one indexed statement, and token issue refreshes the secret's last use in the batch's statement (one round trip per token)",
  },
  'libs/auth/src/clients/client-credential.repository.ts': {
    tables: ['organizations', 'system_accounts', 'client_secrets', 'client_certificates'],
    reason: 'client authentication reads the credentials, the account and the lockout counters in one statement on the token hot path',
  },
  'libs/auth/src/sessions/sign-in-session.repository.ts': {
    tables: ['users'],
    reason:
      "every request with a session cookie reads the session and its user's name and enabled flag in one indexed statement, so a disabled user's session answers nothing at once",
  },
  'libs/auth/src/oidc/authorization-grant.repository.ts': {
    tables: ['users'],
    reason:
      "the code exchange consumes the code, checks that the person is enabled and reads their name and role in the statement that records its tokens (one round trip on the exchange's path, DECISIONS 15.3)",
  },
  'libs/auth/src/clients/lockout.service.ts': {
    tables: ['organizations'],
    reason: 'a failure is audited under its organization only when it exists, inside the counter statement',
  },
  'libs/device/src/device.repository.ts': {
    tables: ['users'],
    reason: "a device shows its owner's userName: a read-only join instead of one lookup per device in lists",
  },
  'libs/credential-management/src/content-requests/content-request.repository.ts': {
    tables: ['users'],
    reason:
      "a content request shows its wallet owner's userName and is reached through the owner's groups (Operator Dependent): a read-only join, as for wallets",
  },
  'libs/credential-management/src/credentials/credential.repository.ts': {
    tables: ['users'],
    reason: "a credential shows its wallet owner's userName and is reached through the owner's groups (Operator Dependent): a read-only join, as for wallets",
  },
  'libs/credential-management/src/wallets/wallet.repository.ts': {
    tables: ['users'],
    reason: "a wallet shows its owner's userName and is reached through its owner's groups (Operator Dependent): a read-only join, as for devices",
  },
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'testing' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}

/** Table names after the SQL keywords that name one; comments are removed first. */
function tablesIn(source: string, known: Set<string>): Set<string> {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const found = new Set<string>();
  for (const match of code.matchAll(/\b(?:FROM|JOIN|INTO|UPDATE|TABLE|EXISTS)\s+"?([a-z_]+)/g)) if (known.has(match[1])) found.add(match[1]);
  return found;
}

describe('table ownership (Issue 11 item 5)', () => {
  const migrations = readdirSync(join(ROOT, 'migrations'))
    .filter((name) => name.endsWith('.ts'))
    .map((name) => readFileSync(join(ROOT, 'migrations', name), 'utf8'))
    .join('\n');
  const created = new Set([...migrations.matchAll(/CREATE TABLE (?:IF NOT EXISTS )?"?([a-z_]+)/g)].map((m) => m[1]));
  const libraries = readdirSync(join(ROOT, 'libs'));
  const usage = libraries.flatMap((library) =>
    sourceFiles(join(ROOT, 'libs', library, 'src')).map((file) => ({
      library,
      file: relative(ROOT, file),
      tables: tablesIn(readFileSync(file, 'utf8'), created),
    })),
  );

  it('every table the migrations create has exactly one owner, a library that exists', () => {
    expect([...created].filter((table) => !OWNERS[table]).sort()).toEqual([]);
    expect(Object.keys(OWNERS).filter((table) => !created.has(table))).toEqual([]);
    expect([...new Set(Object.values(OWNERS))].filter((library) => !libraries.includes(library))).toEqual([]);
  });

  it("a library's SQL names only its own tables, except the reviewed exceptions", () => {
    const foreign = usage.flatMap(({ library, file, tables }) =>
      [...tables]
        .filter((table) => OWNERS[table] !== library && !REVIEWED[file]?.tables.includes(table))
        .map((table) => `${file} -> ${table} (owned by ${OWNERS[table]})`),
    );
    expect(foreign).toEqual([]);
  });

  it('every reviewed exception is still needed (an exception that no code uses is removed from the list)', () => {
    const stale = Object.entries(REVIEWED).flatMap(([file, { tables }]) => {
      const used = usage.find((u) => u.file === file)?.tables ?? new Set<string>();
      return tables.filter((table) => !used.has(table)).map((table) => `${file} -> ${table}`);
    });
    expect(stale).toEqual([]);
  });
});
