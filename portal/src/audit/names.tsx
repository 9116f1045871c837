import { Anchor } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { api, answer } from '../api/client';
import type { AuditEvent } from '../api/resources';
import type { paths } from '../api/schema';
import { useWhoami } from '../session/whoami';

type UserList = paths['/aims/rs/scim/v2/Users/.search']['post']['responses'][200]['content']['application/scim+json'];
type DeviceList = paths['/aims/rs/scim/v2/Device/.search']['post']['responses'][200]['content']['application/scim+json'];
type RequestList = paths['/aims/rs/scim/v2/ContentRequest/.search']['post']['responses'][200]['content']['application/scim+json'];

const SEARCH_REQUEST = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest' as const;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What an event's target is, read from its action's group (the audit catalogue names each action `group.verb`). */
type Kind = 'device' | 'request' | 'user' | 'system-account' | 'credential' | 'other';

export function targetKind(action: string): Kind {
  const group = action.split('.')[0];
  if (group === 'device') return 'device';
  if (group === 'content_request') return 'request';
  if (group === 'user') return 'user';
  if (['system_account', 'client_secret', 'client_certificate', 'oidc_client'].includes(group)) return 'system-account';
  if (group === 'credential') return 'credential';
  return 'other';
}

/** How a person reads an object the log names: a text, the id on hover, and the object's page when the portal has one. */
export interface Named {
  text: string;
  title: string;
  link?: { to: '/$org/devices/$id' | '/$org/requests/$id'; id: string } | { to: '/$org/system-accounts/$clientId'; clientId: string } | { to: '/$org/users' };
}

/** `id eq "a" or id eq "b"` for one search per kind; cut where the filter would pass the API's 4,096 characters. */
function filtersFor(terms: Array<[attribute: string, value: string]>): string[] {
  const filters: string[] = [];
  let current = '';
  for (const [attribute, value] of terms) {
    const term = `${attribute} eq ${JSON.stringify(value)}`;
    if (current && current.length + term.length + 4 > 3_500) {
      filters.push(current);
      current = '';
    }
    current = current ? `${current} or ${term}` : term;
  }
  return current ? [...filters, current] : filters;
}

/** The resources of every chunk's search, as one list. */
async function searchAll<T>(terms: Array<[string, string]>, search: (filter: string) => Promise<{ Resources: T[] }>): Promise<{ Resources: T[] }> {
  const pages = await Promise.all(filtersFor(terms).map(search));
  return { Resources: pages.flatMap((page) => page.Resources) };
}
const unique = (values: Array<string | null | undefined>) => [...new Set(values.filter((v): v is string => Boolean(v)))].sort();

/**
 * The names of the actors and targets of a page of audit events (issue 37 item 4): one search per
 * kind (users by id and by user name, devices, content requests), asked only with the permission it
 * needs and only for ids of the right form, so that no call is refused (DECISIONS 17). An id or name
 * that no search answers (a deleted object, a kind the portal cannot read) is shown as it is.
 */
export function useAuditNames(org: string, events: AuditEvent[]) {
  const whoami = useWhoami(org);
  const has = (permission: string) => whoami.permissions.includes(permission);
  const ids = (kind: Kind) => unique(events.filter((e) => targetKind(e.action) === kind && e.target && UUID.test(e.target)).map((e) => e.target));
  const userIds = ids('user');
  const deviceIds = unique([...ids('device'), ...events.filter((e) => targetKind(e.action) === 'credential').map((e) => deviceOf(e))]);
  const requestIds = ids('request');
  const actors = unique(events.map((e) => e.actor)).filter((a) => a.length <= 256);
  const users = useQuery({
    queryKey: ['audit-names', org, 'users', userIds, actors],
    queryFn: () =>
      searchAll([...userIds.map((id): [string, string] => ['id', id]), ...actors.map((name): [string, string] => ['userName', name])], (filter) =>
        answer<UserList>(api.POST('/aims/rs/scim/v2/Users/.search', { body: { schemas: [SEARCH_REQUEST], filter, count: 200 } })),
      ),
    enabled: has('user.search') && userIds.length + actors.length > 0,
    staleTime: 60_000,
  });
  const devices = useQuery({
    queryKey: ['audit-names', org, 'devices', deviceIds],
    queryFn: () =>
      searchAll(
        deviceIds.map((id): [string, string] => ['id', id]),
        (filter) => answer<DeviceList>(api.POST('/aims/rs/scim/v2/Device/.search', { body: { schemas: [SEARCH_REQUEST], filter, count: 200 } })),
      ),
    enabled: has('device.search') && deviceIds.length > 0,
    staleTime: 60_000,
  });
  const requests = useQuery({
    queryKey: ['audit-names', org, 'requests', requestIds],
    queryFn: () =>
      searchAll(
        requestIds.map((id): [string, string] => ['id', id]),
        (filter) => answer<RequestList>(api.POST('/aims/rs/scim/v2/ContentRequest/.search', { body: { schemas: [SEARCH_REQUEST], filter, count: 200 } })),
      ),
    enabled: has('contentRequest.search') && requestIds.length > 0,
    staleTime: 60_000,
  });
  const administrator = whoami.organizationAdministrator || whoami.platformAdministrator;
  const user = (match: (u: UserList['Resources'][number]) => boolean) => users.data?.Resources.find(match);
  const deviceText = (id: string) => {
    const cuid = devices.data?.Resources.find((d) => d.id === id)?.externalIds?.[0]?.CUID;
    return cuid ? `Card ${cuid}` : undefined;
  };

  const actor = (event: AuditEvent): Named => {
    const person = user((u) => u.userName?.toLowerCase() === event.actor.toLowerCase());
    if (person)
      return {
        text: person.userName!,
        title: `User ${person.displayName ?? person.userName} (${person.id})`,
        link: administrator ? { to: '/$org/users' } : undefined,
      };
    // A system account's Client ID is `{org}-{suffix}` (DECISIONS 4).
    if (administrator && new RegExp(`^${org.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-[A-Za-z0-9]{1,64}$`).test(event.actor))
      return { text: event.actor, title: `System account ${event.actor}`, link: { to: '/$org/system-accounts/$clientId', clientId: event.actor } };
    return { text: event.actor, title: event.actor };
  };

  const target = (event: AuditEvent): Named | null => {
    const id = event.target;
    if (!id) return null;
    switch (targetKind(event.action)) {
      case 'device':
        return {
          text: deviceText(id) ?? `Device ${id.slice(0, 8)}`,
          title: `Device ${id}`,
          link: has('device.search') ? { to: '/$org/devices/$id', id } : undefined,
        };
      case 'request': {
        const request = requests.data?.Resources.find((r) => r.id === id);
        return {
          text: request ? `${request.type} for ${request.wallet?.display ?? 'nobody'}` : `Request ${id.slice(0, 8)}`,
          title: `Content request ${id}`,
          link: has('contentRequest.search') ? { to: '/$org/requests/$id', id } : undefined,
        };
      }
      case 'user': {
        const person = user((u) => u.id === id);
        return { text: person?.userName ?? `User ${id.slice(0, 8)}`, title: `User ${id}`, link: administrator ? { to: '/$org/users' } : undefined };
      }
      case 'system-account':
        return { text: id, title: `System account ${id}`, link: administrator ? { to: '/$org/system-accounts/$clientId', clientId: id } : undefined };
      case 'credential': {
        const device = deviceOf(event);
        const on = device ? deviceText(device) : undefined;
        return {
          text: on ? `Credential on ${on.toLowerCase()}` : `Credential ${id.slice(0, 8)}`,
          title: `Credential ${id}`,
          link: device && has('device.search') ? { to: '/$org/devices/$id', id: device } : undefined,
        };
      }
      default:
        return { text: id, title: id };
    }
  };
  return { actor, target };
}

/** The device a credential's event names in its details, if any. */
function deviceOf(event: AuditEvent): string | undefined {
  const device = event.details?.device;
  return typeof device === 'string' && UUID.test(device) ? device : undefined;
}

/** A name from useAuditNames: a link to the object's page where there is one, the id on hover. */
export function NameLink({ org, named }: { org: string; named: Named | null }) {
  if (!named) return <>none</>;
  const { link } = named;
  if (!link) return <span title={named.title}>{named.text}</span>;
  return (
    <Anchor
      title={named.title}
      renderRoot={(props) =>
        link.to === '/$org/system-accounts/$clientId' ? (
          <Link {...props} to={link.to} params={{ org, clientId: link.clientId }} />
        ) : link.to === '/$org/users' ? (
          <Link {...props} to={link.to} params={{ org }} />
        ) : (
          <Link {...props} to={link.to} params={{ org, id: link.id }} />
        )
      }
    >
      {named.text}
    </Anchor>
  );
}
