import { Injectable } from '@nestjs/common';
import { SCIM_CORE_USER_SCHEMA, UpdateUserInput, UserRow, UserService } from '@app/accounts';
import { OperatorDependentPolicy } from '@app/auth';
import { Actor, IfMatch, Principal, ScimSearch, applyPatch, invalidValue, notFound, isUuid } from '@app/common';
import { ChangeFeed, FeedCache } from '@app/persistence';
import { USER_LINK_COLUMNS, UserLinkColumns, UserLinksRepository, linkedRow } from './user-links.repository';
import { UserLinks } from './user.presenter';
import { ENTERPRISE_USER_SCHEMA, USER_PERMISSION_SCHEMA, UserFields, parseUserBody, userFields, writableUser } from './user.schema';

/** Bounds the per-instance cache of presented users. */
const MAX_CACHED_USERS = 50_000;

/** A user with what its presentation needs from this library. */
export interface LinkedUser {
  user: UserRow;
  links: UserLinks;
}

/** The role a cardholder gets when the body names none (interface: the Cardholder role holds Scope.device). */
export const DEFAULT_CARDHOLDER_ROLE = 'Cardholder';

const WRITABLE = [
  'schemas',
  'userName',
  'externalId',
  'name',
  'displayName',
  'nickName',
  'title',
  'preferredLanguage',
  'locale',
  'timezone',
  'active',
  'password',
  'emails',
  'phoneNumbers',
  'addresses',
  'userType',
  'roles',
];
const PATCH_TARGET = { coreSchema: SCIM_CORE_USER_SCHEMA, extensions: [ENTERPRISE_USER_SCHEMA, USER_PERMISSION_SCHEMA], attributes: WRITABLE };

/**
 * The SCIM Users resource (CREDENTIAL-MANAGEMENT.md "Users"; RFC 7644 3.3-3.6) over the users of
 * libs/accounts, which owns them: bodies are SCIM here, rules and storage are UserService's (the
 * admin API's users are the same users). Operator Dependent callers reach only users who share one of
 * their groups (404 otherwise, and left out of lists).
 */
@Injectable()
export class ScimUserService {
  /**
   * Users as GET /Users/{id} and GET /Self present them, kept per instance: every change of a user
   * (accounts' UserService, group membership here) publishes 'subject' with its id in its commit,
   * which evicts it on every instance; an organization change drops everything.
   */
  private readonly cache: FeedCache<LinkedUser>;

  constructor(
    private readonly users: UserService,
    private readonly userLinks: UserLinksRepository,
    private readonly operatorDependent: OperatorDependentPolicy,
    changes: ChangeFeed,
  ) {
    this.cache = new FeedCache(changes, {
      // Keys are lower-case: a client may write a UUID in capitals, and a change is published with the id as sent.
      evicts: (change) => (change.topic === 'subject' ? { key: change.id.toLowerCase() } : change.topic === 'organization' ? 'all' : undefined),
      maxEntries: MAX_CACHED_USERS,
    });
  }

  async create(principal: Principal, body: unknown, actor: Actor): Promise<UserRow> {
    const fields = userFields(parseUserBody(body));
    const userType = fields.userType ?? 'cardholder';
    if (userType === 'operator' && fields.role === undefined) {
      throw invalidValue(`Invalid User: an operator needs a role: roles [{"value": "Help Desk"}] or ${USER_PERMISSION_SCHEMA}.roles.`);
    }
    return this.users.create(
      principal.org,
      {
        userName: fields.userName,
        userType,
        role: fields.role ?? DEFAULT_CARDHOLDER_ROLE,
        groups: fields.groups ?? [],
        password: fields.password,
        name: fields.name,
        displayName: fields.displayName,
        emails: fields.emails,
        externalId: fields.externalId,
        profile: fields.profile,
        disabled: fields.active === false,
      },
      actor,
    );
  }

  async get(principal: Principal, id: string): Promise<UserRow> {
    return (await this.read(principal, id)).user;
  }

  /** A user with its wallet and group ids, from the cache when it has it. */
  async read(principal: Principal, id: string): Promise<LinkedUser> {
    const missing = () => notFound(`User "${id.slice(0, 64)}" does not exist in organization "${principal.org}".`);
    if (!isUuid(id)) throw missing();
    const linked = await this.cache.read(id.toLowerCase(), async () => {
      const user = await this.users.find(principal.org, id);
      return user && { user, links: (await this.links(principal.org, [user]))(user) };
    });
    // The same answer for another organization's id and, for an Operator Dependent caller, for a
    // user outside its groups, as for an id that does not exist (DECISIONS 2): nothing tells them apart.
    if (!linked || linked.user.org_id !== principal.org || !this.operatorDependent.canReach(principal, linked.user)) throw missing();
    return linked;
  }

  /** A page of users with their wallet and group ids, in one statement. */
  async search(principal: Principal, search: ScimSearch): Promise<{ rows: LinkedUser[]; total: number }> {
    const { rows, total } = await this.users.search<UserLinkColumns>(principal.org, search, this.operatorDependent.groupsOf(principal), USER_LINK_COLUMNS);
    return { rows: rows.map(linkedRow), total };
  }

  /** PUT: the body replaces every writable attribute; `active`, `password`, the role and groups left out keep their values. */
  async replace(principal: Principal, id: string, body: unknown, actor: Actor, ifMatch?: IfMatch): Promise<UserRow> {
    await this.get(principal, id);
    return this.users.update(principal.org, id, changesOf(userFields(parseUserBody(body))), actor, ifMatch);
  }

  /** PATCH (RFC 7644 3.5.2): the operations apply to the user's writable view, which then passes the PUT rules. */
  async patch(principal: Principal, id: string, body: unknown, actor: Actor, ifMatch?: IfMatch): Promise<UserRow> {
    const current = await this.get(principal, id);
    const patched = applyPatch(writableView(current), body, PATCH_TARGET);
    return this.users.update(principal.org, id, changesOf(userFields(parseUserBody(coerceActive(patched)))), actor, ifMatch);
  }

  async delete(principal: Principal, id: string, force: boolean, actor: Actor): Promise<void> {
    await this.get(principal, id);
    await this.users.delete(principal.org, id, actor, { force });
  }

  /** The wallet and group ids of users read without a search (searches select them: USER_LINK_COLUMNS), in one round trip. */
  async links(orgId: string, users: readonly UserRow[]): Promise<(user: UserRow) => UserLinks> {
    const { walletIds, groupIds } = await this.userLinks.find(
      orgId,
      users.map((user) => user.id),
      [...new Set(users.flatMap((user) => user.groups))],
    );
    return (user) => ({ walletId: walletIds.get(user.id), groupIds });
  }
}

function changesOf(fields: UserFields): UpdateUserInput {
  return {
    userName: fields.userName,
    userType: fields.userType,
    ...(fields.role !== undefined ? { role: fields.role } : {}),
    ...(fields.groups !== undefined ? { groups: fields.groups } : {}),
    ...(fields.active !== undefined ? { disabled: !fields.active } : {}),
    ...(fields.password !== undefined ? { password: fields.password } : {}),
    name: fields.name,
    displayName: fields.displayName,
    emails: fields.emails,
    externalId: fields.externalId,
    profile: fields.profile,
  };
}

/** A user as PATCH operations see it: the attributes a body may write, in SCIM form. */
function writableView(user: UserRow): Record<string, unknown> {
  const { enterprise, phoneNumbers, addresses, ...profile } = user.profile ?? {};
  return writableUser({
    schemas: [SCIM_CORE_USER_SCHEMA],
    userName: user.user_name,
    ...(user.external_id ? { externalId: user.external_id } : {}),
    ...(user.name ? { name: user.name } : {}),
    ...(user.display_name ? { displayName: user.display_name } : {}),
    ...profile,
    active: !user.disabled,
    emails: user.emails,
    ...(phoneNumbers?.length ? { phoneNumbers } : {}),
    ...(addresses?.length ? { addresses } : {}),
    userType: user.user_type,
    roles: [{ value: user.role }],
    ...(enterprise ? { [ENTERPRISE_USER_SCHEMA]: enterprise } : {}),
    [USER_PERMISSION_SCHEMA]: { groups: user.groups },
  });
}

/**
 * Some identity providers (Microsoft Entra ID among them) send `active` in PATCH as the string
 * "True" or "False"; read those two as the booleans they mean, refuse anything else by the rules.
 */
function coerceActive(view: Record<string, unknown>): Record<string, unknown> {
  const active = view.active;
  if (typeof active === 'string' && /^(true|false)$/i.test(active)) return { ...view, active: active.toLowerCase() === 'true' };
  return view;
}
