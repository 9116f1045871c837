import { keepPreviousData, queryOptions } from '@tanstack/react-query';
import { api, answer } from '../api/client';
import type { paths } from '../api/schema';

/**
 * The organization's reference data as the admin API answers it (CREDENTIAL-MANAGEMENT.md
 * "Reference data"): device policies, groups and printers, paged, by name.
 */
type Listed<P extends keyof paths> = paths[P] extends { get: { responses: { 200: { content: { 'application/json': infer L } } } } } ? L : never;

export type DevicePolicyList = Listed<'/admin/v1/organizations/{org}/device-policies'>;
export type DevicePolicy = DevicePolicyList['Resources'][number];
export type GroupList = Listed<'/admin/v1/organizations/{org}/groups'>;
export type Group = GroupList['Resources'][number];
export type PrinterList = Listed<'/admin/v1/organizations/{org}/printers'>;
export type Printer = PrinterList['Resources'][number];

export const PAGE = 50;
const paging = (page: number) => ({ startIndex: (page - 1) * PAGE + 1, count: PAGE });

export const devicePoliciesQuery = (org: string, page: number) =>
  queryOptions({
    queryKey: ['device-policies', org, page],
    queryFn: () => answer<DevicePolicyList>(api.GET('/admin/v1/organizations/{org}/device-policies', { params: { path: { org }, query: paging(page) } })),
    placeholderData: keepPreviousData,
  });

export const groupsQuery = (org: string, page: number) =>
  queryOptions({
    queryKey: ['groups', org, page],
    queryFn: () => answer<GroupList>(api.GET('/admin/v1/organizations/{org}/groups', { params: { path: { org }, query: paging(page) } })),
    placeholderData: keepPreviousData,
  });

/** Every group, for the device policy form's choice (an organization has tens, not thousands). */
export const allGroupsQuery = (org: string) =>
  queryOptions({
    queryKey: ['groups', org, 'all'],
    queryFn: () => answer<GroupList>(api.GET('/admin/v1/organizations/{org}/groups', { params: { path: { org }, query: { count: 1000 } } })),
  });

export const printersQuery = (org: string, page: number) =>
  queryOptions({
    queryKey: ['printers', org, page],
    queryFn: () => answer<PrinterList>(api.GET('/admin/v1/organizations/{org}/printers', { params: { path: { org }, query: paging(page) } })),
    placeholderData: keepPreviousData,
  });

/** The entity tag of what was read (RFC 7644 3.14): sent back as If-Match where the API honours it. */
export const ifMatch = (version: string | undefined) => (version ? { 'If-Match': `W/"${version}"` } : undefined);
