import { Injectable } from '@nestjs/common';

import { Database, PG_FOREIGN_KEY_VIOLATION, PG_UNIQUE_VIOLATION, Transaction, isPgError, prepared } from '@app/persistence';
import { DomainError, ScimSearch, SqlParameters, notFound, searchSql, uniqueness } from '@app/common';
import { USER_SEARCH_DEFINITION } from './user-search';
import { OrganizationSettings, withDefaults } from '../organizations/organization-settings';
import { ParsedCertificate } from '../system-accounts/certificate-parser';
import { CertificateRow, StoredCertificate, addCertificate } from '../certificates/certificate-store';

const USER_CERTIFICATES = { ownerTable: 'users', table: 'user_certificates', ownerColumn: 'user_id', ownerLabel: 'user' } as const;

export type UserType = 'operator' | 'cardholder';

/** The SCIM complex attribute `name` (RFC 7643 4.1.1). */
export interface UserNameParts {
  givenName?: string;
  familyName?: string;
  middleName?: string;
  formatted?: string;
  honorificPrefix?: string;
  honorificSuffix?: string;
}

export interface UserEmail {
  value: string;
  type?: string;
  primary?: boolean;
}

/**
 * Profile attributes SCIM provisioning clients send (RFC 7643 4.1 and the enterprise extension
 * 4.3), stored as one document: nothing in the platform decides on them, they are kept and returned.
 */
export interface UserProfile {
  title?: string;
  preferredLanguage?: string;
  locale?: string;
  timezone?: string;
  nickName?: string;
  phoneNumbers?: { value: string; type?: string; primary?: boolean }[];
  addresses?: Record<string, unknown>[];
  enterprise?: Record<string, unknown>;
}

/** A user's row under its lock: its name, the role and groups the grant rules compare, and whether it is disabled. */
export interface LockedUser {
  id: string;
  user_name: string;
  role: string;
  groups: string[];
  disabled: boolean;
  organization_administrator: boolean;
  platform_administrator: boolean;
}

/** A user as every read outside authentication sees it: no password hash, only whether there is one. */
export interface UserRow {
  id: string;
  org_id: string;
  user_name: string;
  user_type: UserType;
  role: string;
  groups: string[];
  name: UserNameParts | null;
  display_name: string | null;
  emails: UserEmail[];
  external_id: string | null;
  profile: UserProfile;
  has_password: boolean;
  /** x5t#S256 thumbprints of the enrolled certificates, oldest first. */
  certificate_thumbprints: string[];
  /** The enrolled certificates (public material), in the same order. */
  certificate_pems: string[];
  /** The organization's administrator (DECISIONS 11): the admin API takes their token or session. */
  organization_administrator: boolean;
  /** The one platform administrator person, a user of the `platform` organization (DECISIONS 11). */
  platform_administrator: boolean;
  disabled: boolean;
  created_at: Date;
  updated_at: Date;
  version: number;
}

/**
 * Columns another library adds to a page of users (UserService.search): read-only SQL over that
 * library's own tables, correlated with the user row `u`, without parameters. It saves the page's
 * second round trip for what the other library shows beside each user (its wallet, its group ids).
 */
export interface UserSearchColumns {
  sql: string;
}

/** A user as user authentication sees it: with its organization's settings, in the same read. */
export interface UserWithSettings {
  user: UserRow;
  orgSettings: OrganizationSettings;
}

/** Prepared once per connection: the code and refresh grants read it on every exchange. */
const FIND_TOKEN_SUBJECT = prepared(
  'user-find-token-subject',
  `SELECT u.id, u.org_id, u.user_name, u.role, u.disabled, o.settings AS org_settings
     FROM users u JOIN organizations o ON o.id = u.org_id WHERE u.org_id = $1 AND u.id = $2`,
);

/** The columns a person's tokens are made from. */
export type TokenSubjectUser = Pick<UserRow, 'id' | 'org_id' | 'user_name' | 'role' | 'disabled'>;

export interface TokenSubjectWithSettings {
  user: TokenSubjectUser;
  orgSettings: OrganizationSettings;
}

export interface NewUser {
  id: string;
  orgId: string;
  userName: string;
  userType: UserType;
  role: string;
  groups: string[];
  name: UserNameParts | null;
  displayName: string | null;
  emails: UserEmail[];
  externalId?: string | null;
  profile?: UserProfile;
  disabled?: boolean;
  organizationAdministrator?: boolean;
  platformAdministrator?: boolean;
  passwordHash: string | null;
  now: Date;
}

/** PATCH changes; `null` clears name and displayName, and empties groups and emails (DECISIONS 7). */
export interface UserChanges {
  role?: string;
  groups?: string[] | null;
  disabled?: boolean;
  organizationAdministrator?: boolean;
  platformAdministrator?: boolean;
  name?: UserNameParts | null;
  displayName?: string | null;
  emails?: UserEmail[] | null;
  externalId?: string | null;
  /** Replaces the whole profile document. */
  profile?: UserProfile;
  /** A new password hash (the service hashes; PATCH and PUT may set a password, never clear it). */
  passwordHash?: string;
}

/** Every column but password_hash; `u` is the users table. */
const USER_COLUMNS = `u.id, u.org_id, u.user_name, u.user_type, u.role, u.groups, u.name, u.display_name, u.emails,
  u.external_id, u.profile, u.password_hash IS NOT NULL AS has_password,
  ARRAY(SELECT uc.thumbprint FROM user_certificates uc WHERE uc.user_id = u.id ORDER BY uc.created_at, uc.thumbprint) AS certificate_thumbprints,
  ARRAY(SELECT uc.pem FROM user_certificates uc WHERE uc.user_id = u.id ORDER BY uc.created_at, uc.thumbprint) AS certificate_pems,
  u.organization_administrator, u.platform_administrator, u.disabled, u.created_at, u.updated_at, u.version`;

const FIND_IN_ORG = prepared('user_find_in_org', `SELECT ${USER_COLUMNS} FROM users u WHERE u.org_id = $1 AND u.id = $2`);

interface OrgSettingsColumn {
  org_settings: Partial<OrganizationSettings>;
}

/**
 * Users of the credential-management API and their credentials. Methods that read secret material
 * say so in their name (findWithPasswordHash), so a reviewer can see every place that touches it;
 * every other read leaves the hash out.
 */
@Injectable()
export class UserRepository {
  constructor(private readonly db: Database) {}

  async create(row: NewUser, tx?: Transaction): Promise<UserRow> {
    try {
      const [created] = await this.db.query<UserRow>(
        `INSERT INTO users AS u (id, org_id, user_name, user_type, role, groups, name, display_name, emails, password_hash, created_at, updated_at, external_id, profile, disabled,
                                organization_administrator, platform_administrator)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $12, $13, $14, $15, $16) RETURNING ${USER_COLUMNS}`,
        [
          row.id,
          row.orgId,
          row.userName,
          row.userType,
          row.role,
          row.groups,
          row.name === null ? null : JSON.stringify(row.name),
          row.displayName,
          JSON.stringify(row.emails),
          row.passwordHash,
          row.now,
          row.externalId ?? null,
          JSON.stringify(row.profile ?? {}),
          row.disabled ?? false,
          row.organizationAdministrator ?? false,
          row.platformAdministrator ?? false,
        ],
        tx,
      );
      return created;
    } catch (error) {
      if (isPgConstraint(error, PLATFORM_ADMINISTRATOR_INDEX)) throw anotherPlatformAdministrator();
      if (isPgError(error, PG_UNIQUE_VIOLATION)) throw uniqueness(`A user with userName "${row.userName}" already exists in organization "${row.orgId}".`);
      if (isPgError(error, PG_FOREIGN_KEY_VIOLATION)) throw notFound(`Organization "${row.orgId}" does not exist.`);
      throw error;
    }
  }

  /** `id` must be a UUID (the service checks it before asking). */
  async findInOrg(orgId: string, id: string, tx?: Transaction): Promise<UserRow | undefined> {
    const [row] = await this.db.query<UserRow>(FIND_IN_ORG, [orgId, id], tx);
    return row;
  }

  async listInOrg(orgId: string, offset: number, limit: number): Promise<{ rows: UserRow[]; total: number }> {
    const rows = await this.db.query<UserRow & { total: string }>(
      `SELECT ${USER_COLUMNS}, count(*) OVER () AS total FROM users u WHERE u.org_id = $1 ORDER BY u.user_name OFFSET $2 LIMIT $3`,
      [orgId, offset, limit],
    );
    // An empty page (count=0, or past the end) has no row to carry the window count.
    if (rows.length === 0) {
      const [count] = await this.db.query<{ n: string }>('SELECT count(*) AS n FROM users WHERE org_id = $1', [orgId]);
      return { rows: [], total: Number(count.n) };
    }
    return { rows: rows.map(({ total: _total, ...row }) => row), total: Number(rows[0].total) };
  }

  /**
   * Applies the changes under the row lock and says whether they re-enabled a disabled user (the
   * service then revokes the tokens it still has, in the same transaction, so that re-enabling
   * never brings back a token the disabled flag stopped).
   */
  async update(
    orgId: string,
    id: string,
    changes: UserChanges,
    now: Date,
    tx?: Transaction,
  ): Promise<(UserRow & { reenabled: boolean; previousVersion: number; previousRole: string; promotedToAdministrator: boolean }) | undefined> {
    const [row] = await this.db.query<
      UserRow & { was_disabled: boolean; was_version: number; was_role: string; was_organization_administrator: boolean; was_platform_administrator: boolean }
    >(
      `WITH before AS (
         SELECT id AS before_id, disabled AS was_disabled, version AS was_version, role AS was_role,
                organization_administrator AS was_organization_administrator, platform_administrator AS was_platform_administrator
           FROM users WHERE org_id = $1 AND id = $2 FOR UPDATE
       ), changed AS (
         UPDATE users AS u
            SET role = COALESCE($3, role),
                groups = CASE WHEN $4::boolean THEN COALESCE($5::text[], '{}') ELSE groups END,
                disabled = COALESCE($6, disabled),
                organization_administrator = COALESCE($18, organization_administrator),
                platform_administrator = COALESCE($19, platform_administrator),
                name = CASE WHEN $7::boolean THEN $8::jsonb ELSE name END,
                display_name = CASE WHEN $9::boolean THEN $10::text ELSE display_name END,
                emails = CASE WHEN $11::boolean THEN COALESCE($12::jsonb, '[]'::jsonb) ELSE emails END,
                external_id = CASE WHEN $14::boolean THEN $15::text ELSE external_id END,
                profile = COALESCE($16::jsonb, profile),
                password_hash = COALESCE($17::text, password_hash),
                updated_at = $13, version = version + 1
           FROM before WHERE u.id = before.before_id
         RETURNING ${USER_COLUMNS}, before.was_disabled, before.was_version, before.was_role,
                   before.was_organization_administrator, before.was_platform_administrator
       )
       SELECT changed.* FROM changed`,
      [
        orgId,
        id,
        changes.role ?? null,
        changes.groups !== undefined,
        changes.groups ?? null,
        changes.disabled ?? null,
        changes.name !== undefined,
        changes.name ? JSON.stringify(changes.name) : null,
        changes.displayName !== undefined,
        changes.displayName ?? null,
        changes.emails !== undefined,
        changes.emails ? JSON.stringify(changes.emails) : null,
        now,
        changes.externalId !== undefined,
        changes.externalId ?? null,
        changes.profile === undefined ? null : JSON.stringify(changes.profile),
        changes.passwordHash ?? null,
        changes.organizationAdministrator ?? null,
        changes.platformAdministrator ?? null,
      ],
      tx,
    );
    if (!row) return undefined;
    const {
      was_disabled: wasDisabled,
      was_version: previousVersion,
      was_role: previousRole,
      was_organization_administrator,
      was_platform_administrator,
      ...user
    } = row;
    const promotedToAdministrator =
      (!was_organization_administrator && user.organization_administrator) || (!was_platform_administrator && user.platform_administrator);
    return { ...user, reenabled: wasDisabled && !user.disabled, previousVersion, previousRole, promotedToAdministrator };
  }

  /** The users who carry each of these group names (membership lives on the users). */
  async groupMembers(orgId: string, names: readonly string[]): Promise<Map<string, { id: string; userName: string }[]>> {
    const members = new Map<string, { id: string; userName: string }[]>();
    if (names.length === 0) return members;
    const rows = await this.db.query<{ name: string; id: string; user_name: string }>(
      `SELECT g.name, u.id, u.user_name FROM users u CROSS JOIN LATERAL unnest(u.groups) AS g(name)
        WHERE u.org_id = $1 AND u.groups && $2::text[] AND g.name = ANY($2::text[]) ORDER BY lower(u.user_name), u.id`,
      [orgId, names],
    );
    for (const row of rows) members.set(row.name, [...(members.get(row.name) ?? []), { id: row.id, userName: row.user_name }]);
    return members;
  }

  /** Users by type; `groups` limits to users sharing one of them (an Operator Dependent caller's Stats). */
  async countByType(orgId: string, groups: readonly string[] | undefined): Promise<Record<UserType, number>> {
    const rows = await this.db.query<{ user_type: UserType; n: number }>(
      `SELECT user_type, count(*)::int AS n FROM users WHERE org_id = $1 AND ($2::text[] IS NULL OR groups && $2::text[]) GROUP BY user_type`,
      [orgId, groups ?? null],
    );
    const counts: Record<UserType, number> = { cardholder: 0, operator: 0 };
    for (const row of rows) counts[row.user_type] = row.n;
    return counts;
  }

  /** Of these ids, those that are not users of the organization. */
  async unknownIds(orgId: string, ids: readonly string[], tx: Transaction): Promise<string[]> {
    const rows = await this.db.query<{ id: string }>('SELECT id::text FROM users WHERE org_id = $1 AND id = ANY($2::uuid[])', [orgId, ids], tx);
    const known = new Set(rows.map((row) => row.id.toLowerCase()));
    return ids.filter((id) => !known.has(id.toLowerCase()));
  }

  /**
   * Makes exactly `userIds` carry the group name: adds it where missing, removes it from users not
   * listed. Answers the ids of the users that changed (their version grows, as for any change).
   */
  async setGroupMembers(orgId: string, name: string, userIds: readonly string[], now: Date, tx: Transaction): Promise<string[]> {
    const rows = await this.db.query<{ id: string }>(
      `WITH added AS (
         UPDATE users SET groups = array_append(groups, $2), updated_at = $4, version = version + 1
          WHERE org_id = $1 AND id = ANY($3::uuid[]) AND NOT ($2 = ANY(groups)) RETURNING id
       ), removed AS (
         UPDATE users SET groups = array_remove(groups, $2), updated_at = $4, version = version + 1
          WHERE org_id = $1 AND $2 = ANY(groups) AND NOT (id = ANY($3::uuid[])) RETURNING id
       )
       SELECT id::text FROM added UNION ALL SELECT id::text FROM removed`,
      [orgId, name, userIds, now],
      tx,
    );
    return rows.map((row) => row.id);
  }

  /** Renames a group on every user who carries it; answers their ids. */
  async renameGroup(orgId: string, from: string, to: string, now: Date, tx: Transaction): Promise<string[]> {
    const rows = await this.db.query<{ id: string }>(
      `UPDATE users SET groups = array_replace(groups, $2, $3), updated_at = $4, version = version + 1
        WHERE org_id = $1 AND $2 = ANY(groups) RETURNING id::text`,
      [orgId, from, to, now],
      tx,
    );
    return rows.map((row) => row.id);
  }

  /** Takes a group name off every user who carries it; answers their ids. */
  async removeGroup(orgId: string, name: string, now: Date, tx: Transaction): Promise<string[]> {
    const rows = await this.db.query<{ id: string }>(
      `UPDATE users SET groups = array_remove(groups, $2), updated_at = $3, version = version + 1
        WHERE org_id = $1 AND $2 = ANY(groups) RETURNING id::text`,
      [orgId, name, now],
      tx,
    );
    return rows.map((row) => row.id);
  }

  /** The person who is the platform administrator, if anyone is (DECISIONS 11). */
  async findPlatformAdministrator(tx?: Transaction): Promise<{ id: string; user_name: string } | undefined> {
    const [row] = await this.db.query<{ id: string; user_name: string }>('SELECT id, user_name FROM users WHERE platform_administrator', [], tx);
    return row;
  }

  /**
   * Hands the platform administrator role to the user `id` of `platformOrg`, in the caller's
   * transaction: whoever holds it loses it, then `id` gets it (two statements, because the unique
   * index is checked row by row). Answers the user, undefined when `platformOrg` has none with this id
   * (the caller then rolls back), and the ids of the former holder.
   */
  async designatePlatformAdministrator(platformOrg: string, id: string, now: Date, tx: Transaction): Promise<{ user?: UserRow; previous: string[] }> {
    const previous = await this.db.query<{ id: string }>(
      `UPDATE users SET platform_administrator = false, updated_at = $2, version = version + 1
        WHERE platform_administrator AND id <> $1 RETURNING id::text`,
      [id, now],
      tx,
    );
    const [user] = await this.db.query<UserRow>(
      `UPDATE users AS u SET platform_administrator = true, updated_at = $2, version = version + 1
        WHERE org_id = $3 AND id = $1 RETURNING ${USER_COLUMNS}`,
      [id, now, platformOrg],
      tx,
    );
    return { user, previous: previous.map((row) => row.id) };
  }

  /** Locks the user's row for the transaction; answers what the grant rules compare (DECISIONS 5.3). */
  async lockInOrg(orgId: string, id: string, tx: Transaction): Promise<LockedUser | undefined> {
    const [row] = await this.db.query<LockedUser>(
      'SELECT id, user_name, role, groups, disabled, organization_administrator, platform_administrator FROM users WHERE org_id = $1 AND id = $2 FOR UPDATE',
      [orgId, id],
      tx,
    );
    return row;
  }

  /**
   * A page of users and the total matching, for SCIM lists and `.search` (DECISIONS 9). `groups`
   * limits an Operator Dependent caller to the users who share one of its groups.
   */
  async search<Related extends object = object>(
    orgId: string,
    search: ScimSearch,
    groups: readonly string[] | undefined,
    related?: UserSearchColumns,
  ): Promise<{ rows: (UserRow & Related)[]; total: number }> {
    const params = new SqlParameters([orgId]);
    const scope = groups === undefined ? 'TRUE' : `u.groups && ${params.add(groups)}::text[]`;
    const sql = searchSql(search, USER_SEARCH_DEFINITION, params);
    const from = `FROM users u WHERE u.org_id = $1 AND ${scope} AND ${sql.where}`;
    const columns = related ? `${USER_COLUMNS}, ${related.sql}` : USER_COLUMNS;
    return this.db.searchPage<UserRow & Related>(columns, from, { ...sql, ...search.page }, params.values);
  }

  /** Deletes the user with its certificates, tokens and assertion jtis (ON DELETE CASCADE); undefined when there was none. */
  async delete(orgId: string, id: string, tx?: Transaction): Promise<UserRow | undefined> {
    const [row] = await this.db.query<UserRow>(`DELETE FROM users u WHERE u.org_id = $1 AND u.id = $2 RETURNING ${USER_COLUMNS}`, [orgId, id], tx);
    return row;
  }

  /** Replaces the password hash; the answer is the updated user, without the hash. */
  async setPasswordHash(orgId: string, id: string, passwordHash: string, now: Date, tx?: Transaction): Promise<UserRow | undefined> {
    const [row] = await this.db.query<UserRow>(
      `UPDATE users AS u SET password_hash = $3, updated_at = $4, version = version + 1 WHERE org_id = $1 AND id = $2 RETURNING ${USER_COLUMNS}`,
      [orgId, id, passwordHash, now],
      tx,
    );
    return row;
  }

  /** Enrolls a certificate for the user; the rules are those of addCertificate (one place for both owners). */
  addCertificate(userId: string, certificate: ParsedCertificate, now: Date, expiresAt: Date, tx: Transaction): Promise<CertificateRow> {
    return addCertificate(this.db, USER_CERTIFICATES, userId, certificate, now, expiresAt, tx);
  }

  /** The user and its certificates (public material), for jwt-bearer assertion verification (DECISIONS 3.5). */
  /** A user by userName (a CIBA login_hint, DECISIONS 16). */
  async findByUserName(orgId: string, userName: string, tx?: Transaction): Promise<UserRow | undefined> {
    const [row] = await this.db.query<UserRow>(`SELECT ${USER_COLUMNS} FROM users u WHERE u.org_id = $1 AND u.user_name = $2`, [orgId, userName], tx);
    return row ? userOf(row) : undefined;
  }

  async findWithCertificates(orgId: string, userName: string): Promise<(UserWithSettings & { certificates: StoredCertificate[] }) | undefined> {
    const rows = await this.db.query<
      UserRow &
        OrgSettingsColumn & { thumbprint: string | null; pem: string | null; not_before: Date | null; not_after: Date | null; cert_expires_at: Date | null }
    >(
      `SELECT ${USER_COLUMNS}, o.settings AS org_settings, c.thumbprint, c.pem, c.not_before, c.not_after, c.expires_at AS cert_expires_at
         FROM users u JOIN organizations o ON o.id = u.org_id LEFT JOIN user_certificates c ON c.user_id = u.id
        WHERE u.org_id = $1 AND u.user_name = $2
        ORDER BY c.created_at, c.thumbprint`,
      [orgId, userName],
    );
    if (rows.length === 0) return undefined;
    const certificates = rows
      .filter((r) => r.thumbprint !== null)
      .map((r) => ({ thumbprint: r.thumbprint!, pem: r.pem!, not_before: r.not_before!, not_after: r.not_after!, expires_at: r.cert_expires_at! }));
    return { user: userOf(rows[0]), orgSettings: withDefaults(rows[0].org_settings), certificates };
  }

  /**
   * What a person's tokens need of them, by id, with their organization's settings: the token
   * endpoint's code and refresh grants (DECISIONS 15.4), on their hot path, so only these columns.
   */
  async findTokenSubject(orgId: string, id: string): Promise<TokenSubjectWithSettings | undefined> {
    const [row] = await this.db.query<TokenSubjectUser & OrgSettingsColumn>(FIND_TOKEN_SUBJECT, [orgId, id]);
    if (!row) return undefined;
    const { org_settings, ...user } = row;
    return { user, orgSettings: withDefaults(org_settings) };
  }

  /**
   * The user and its password hash (null when it has none), for the password grant and the login
   * page only (DECISIONS 3.5), with the administrator's "must enrol a second factor" mark (14.5).
   */
  async findWithPasswordHash(
    orgId: string,
    userName: string,
  ): Promise<(UserWithSettings & { passwordHash: string | null; mustEnrolSecondFactor: boolean }) | undefined> {
    const [row] = await this.db.query<UserRow & OrgSettingsColumn & { password_hash: string | null; must_enrol_second_factor: boolean }>(
      `SELECT ${USER_COLUMNS}, o.settings AS org_settings, u.password_hash, u.must_enrol_second_factor
         FROM users u JOIN organizations o ON o.id = u.org_id
        WHERE u.org_id = $1 AND u.user_name = $2`,
      [orgId, userName],
    );
    if (!row) return undefined;
    return {
      user: userOf(row),
      orgSettings: withDefaults(row.org_settings),
      passwordHash: row.password_hash,
      mustEnrolSecondFactor: row.must_enrol_second_factor,
    };
  }

  /** Sets or clears the person's "must enrol a second factor" mark (DECISIONS 14.5); whether it changed. */
  async setMustEnrolSecondFactor(orgId: string, id: string, value: boolean, now: Date, tx: Transaction): Promise<boolean> {
    const rows = await this.db.query<{ id: string }>(
      `UPDATE users SET must_enrol_second_factor = $3, updated_at = $4, version = version + 1
        WHERE org_id = $1 AND id = $2 AND must_enrol_second_factor <> $3 RETURNING id`,
      [orgId, id, value, now],
      tx,
    );
    return rows.length > 0;
  }

  /** The person's "must enrol a second factor" mark (DECISIONS 14.5). */
  async mustEnrolSecondFactor(orgId: string, id: string, tx?: Transaction): Promise<boolean> {
    const [row] = await this.db.query<{ must: boolean }>('SELECT must_enrol_second_factor AS must FROM users WHERE org_id = $1 AND id = $2', [orgId, id], tx);
    return row?.must ?? false;
  }
}

/** Only the UserRow fields, so that joined columns (and the hash) never travel further in `user`. */
function userOf(row: UserRow): UserRow {
  return {
    id: row.id,
    org_id: row.org_id,
    user_name: row.user_name,
    user_type: row.user_type,
    role: row.role,
    groups: row.groups,
    name: row.name,
    display_name: row.display_name,
    emails: row.emails,
    external_id: row.external_id,
    profile: row.profile,
    has_password: row.has_password,
    certificate_thumbprints: row.certificate_thumbprints,
    certificate_pems: row.certificate_pems,
    organization_administrator: row.organization_administrator,
    platform_administrator: row.platform_administrator,
    disabled: row.disabled,
    created_at: row.created_at,
    updated_at: row.updated_at,
    version: row.version,
  };
}

/** The partial unique index that admits one platform administrator person (migration AddUserAdministrators). */
const PLATFORM_ADMINISTRATOR_INDEX = 'users_one_platform_administrator';

/** A write that made a second platform administrator person fails on the index: a 409 that says so; other errors pass. */
export function platformAdministratorConflict(error: unknown): never {
  throw isPgConstraint(error, PLATFORM_ADMINISTRATOR_INDEX) ? anotherPlatformAdministrator() : error;
}

function isPgConstraint(error: unknown, constraint: string): boolean {
  return isPgError(error, PG_UNIQUE_VIOLATION) && (error as { constraint?: string }).constraint === constraint;
}

/** Another person holds the role at the moment of the write (the index decided, whoever checked before). */
function anotherPlatformAdministrator(): DomainError {
  return uniqueness('Another person is the platform administrator; there is only one. Remove it from them first, or hand it over with the command line.');
}
