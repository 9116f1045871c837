import { queryOptions } from '@tanstack/react-query';
import { api, answer } from '../api/client';
import type { Certificate, ListedSystemAccount, ListResponse, OidcClient, Role, SecretMetadata, SystemAccount } from '../api/resources';

export const systemAccountsQuery = (org: string) =>
  queryOptions({
    queryKey: ['system-accounts', org],
    // Organizations hold tens of accounts, not thousands: one page of the maximum size, searched here.
    queryFn: () =>
      answer<ListResponse<ListedSystemAccount>>(
        api.GET('/admin/v1/organizations/{org}/system-accounts', { params: { path: { org }, query: { startIndex: 1, count: 1000 } } }),
      ),
  });

export const systemAccountQuery = (org: string, clientId: string) =>
  queryOptions({
    queryKey: ['system-accounts', org, clientId],
    queryFn: () => answer<SystemAccount>(api.GET('/admin/v1/organizations/{org}/system-accounts/{clientId}', { params: { path: { org, clientId } } })),
  });

export const secretsQuery = (org: string, clientId: string) =>
  queryOptions({
    queryKey: ['system-accounts', org, clientId, 'secrets'],
    queryFn: () =>
      answer<ListResponse<SecretMetadata>>(
        api.GET('/admin/v1/organizations/{org}/system-accounts/{clientId}/secrets', { params: { path: { org, clientId } } }),
      ),
  });

export const certificatesQuery = (org: string, clientId: string) =>
  queryOptions({
    queryKey: ['system-accounts', org, clientId, 'certificates'],
    queryFn: () =>
      answer<ListResponse<Certificate>>(
        api.GET('/admin/v1/organizations/{org}/system-accounts/{clientId}/certificates', { params: { path: { org, clientId } } }),
      ),
  });

export const rolesQuery = () =>
  queryOptions({
    queryKey: ['roles'],
    queryFn: () => answer<ListResponse<Role>>(api.GET('/admin/v1/roles')),
    staleTime: Infinity,
  });

/** The account's OpenID Connect client settings; asked only of an account that is set up (its oidcClient), since the API answers 404 otherwise. */
export const oidcClientQuery = (org: string, clientId: string) =>
  queryOptions({
    queryKey: ['system-accounts', org, clientId, 'oidc-client'],
    queryFn: () => answer<OidcClient>(api.GET('/admin/v1/organizations/{org}/system-accounts/{clientId}/oidc-client', { params: { path: { org, clientId } } })),
  });
