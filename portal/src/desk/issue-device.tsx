import { Button, Group, Modal, Radio, Select, Stack, Table, Text, TextInput } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import { api, answer } from '../api/client';
import type { paths } from '../api/schema';
import { ErrorText } from '../components/error-text';
import { SEARCH_REQUEST, scimString, type Device } from './desk-page';
import { useWhoami } from '../session/whoami';

type DeviceList = paths['/aims/rs/scim/v2/Device/.search']['post']['responses'][200]['content']['application/scim+json'];
type PolicyList = paths['/aims/rs/scim/v2/DevicePolicy/.search']['post']['responses'][200]['content']['application/scim+json'];
type ContentRequest = paths['/aims/rs/scim/v2/ContentRequest/{id}']['get']['responses'][200]['content']['application/scim+json'];

/** What the desk issues: a smart card (any policy), or an OTP token (a device whose policy carries OATH credentials only). */
export type Issuing = 'card' | 'otp';
const OATH = ['OATH_TOTP', 'OATH_HOTP'];
const CUID = /^[0-9]{1,64}$/;
/** A policy's credential types: names (PKI_CERTIFICATE, OATH_TOTP, ...), which the OpenAPI description types as references. */
const typesOf = (policy: { credentialTypes?: unknown }) => (policy.credentialTypes ?? []) as string[];
const ATR = /^(?:[0-9A-Fa-f]{2}){2,33}$/;

/**
 * Issuance from the desk (issue 37): for the chosen person, a card in stock found by its CUID (or,
 * where the organization lets this operator add devices, a card not on file added by its CUID and
 * ATR), a device policy (what it carries), then the content request, which opens the request's page.
 * An OTP token is the same request on a token whose policy carries OATH credentials only: the card
 * client writes the seed, which the platform returns once to it (CREDENTIAL-MANAGEMENT "SyncSession").
 * The server decides everything again (the device must be AVAILABLE, the policy must reach the person).
 */
export function IssueDevice({
  org,
  wallet,
  userName,
  onClose,
  issuing = 'card',
}: {
  org: string;
  wallet: string;
  userName: string;
  onClose: () => void;
  issuing?: Issuing;
}) {
  const navigate = useNavigate();
  const whoami = useWhoami(org);
  const queryClient = useQueryClient();
  const [atr, setAtr] = useState('');
  const noun = issuing === 'otp' ? 'token' : 'card';
  const [typed, setTyped] = useState('');
  const [cuid] = useDebouncedValue(typed.trim(), 200);
  const [device, setDevice] = useState<string | null>(null);
  const [policy, setPolicy] = useState<string | null>(null);
  const devices = useQuery({
    queryKey: ['stock-devices', org, cuid],
    queryFn: () =>
      answer<DeviceList>(
        api.POST('/aims/rs/scim/v2/Device/.search', {
          body: {
            schemas: [SEARCH_REQUEST],
            filter: `status.status eq "AVAILABLE"${cuid ? ` and externalIds.CUID sw ${scimString(cuid)}` : ''}`,
            count: 10,
          },
        }),
      ),
    // The rows stay while the next CUID's answer comes: a card chosen (or focused) meanwhile keeps its radio.
    placeholderData: keepPreviousData,
  });
  const policies = useQuery({
    queryKey: ['device-policies', org],
    queryFn: () => answer<PolicyList>(api.POST('/aims/rs/scim/v2/DevicePolicy/.search', { body: { schemas: [SEARCH_REQUEST], count: 200 } })),
  });
  // An OTP token takes the policies that carry one-time-password credentials and nothing else.
  const offered = (policies.data?.Resources ?? []).filter(
    (p) => issuing === 'card' || (typesOf(p).length > 0 && typesOf(p).every((type) => OATH.includes(type))),
  );
  const chosenPolicy = offered.find((p) => p.id === policy);
  /** A card not on file, added to stock by its CUID and ATR (POST /Device), then chosen. */
  const add = useMutation({
    mutationFn: () =>
      answer<Device>(
        api.POST('/aims/rs/scim/v2/Device', {
          // The OpenAPI description gives POST /Device no body schema (DECISIONS 8 says what it takes).
          body: { schemas: ['urn:vendor:scim:api:cms:1.0:Device'], externalIds: [{ ATR: atr.trim().toUpperCase(), CUID: typed.trim() }] } as never,
        }),
      ),
    onSuccess: async (created) => {
      setDevice(created.id!);
      setAtr('');
      await queryClient.invalidateQueries({ queryKey: ['stock-devices', org] });
    },
  });
  const exactMatch = devices.data?.Resources.some((d) => d.externalIds?.some((e) => e.CUID === typed.trim()));
  const mayAdd = whoami.deviceCreation && CUID.test(typed.trim()) && devices.isSuccess && !devices.isFetching && cuid === typed.trim() && !exactMatch;
  const issue = useMutation({
    mutationFn: () =>
      answer<ContentRequest>(
        api.POST('/aims/rs/scim/v2/ContentRequest', {
          body: {
            schemas: ['urn:vendor:scim:api:cms:1.0:ContentRequest'],
            type: 'issuance',
            target: { device: { value: device! }, devicePolicy: { value: policy! } },
            wallet: { value: wallet },
          },
        }),
      ),
    onSuccess: (request) => navigate({ to: '/$org/requests/$id', params: { org, id: request.id } }),
  });
  const cuidOf = (id: string) => devices.data?.Resources.find((d) => d.id === id)?.externalIds?.[0]?.CUID ?? id;
  return (
    <Modal opened onClose={onClose} title={issuing === 'otp' ? `Issue an OTP token to ${userName}` : `Issue a device to ${userName}`} size="lg">
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (device && policy) issue.mutate();
        }}
      >
        <Stack>
          <TextInput
            label={issuing === 'otp' ? 'Token in stock' : 'Card in stock'}
            description={`The beginning of the CUID printed on the ${noun}`}
            type="search"
            value={typed}
            onChange={(event) => setTyped(event.currentTarget.value)}
            data-autofocus
          />
          <ErrorText error={devices.error} />
          <Radio.Group label="Device" value={device} onChange={setDevice} required>
            <Table aria-label="Cards in stock">
              <Table.Tbody>
                {devices.data?.Resources.map((found) => (
                  <Table.Tr key={found.id}>
                    <Table.Td>
                      <Radio value={found.id!} label={`${issuing === 'otp' ? 'Token' : 'Card'} ${found.externalIds?.[0]?.CUID ?? found.id}`} />
                    </Table.Td>
                    <Table.Td>
                      <code>{found.externalIds?.[0]?.ATR}</code>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Radio.Group>
          {devices.isSuccess && devices.data.totalResults === 0 && !mayAdd ? (
            <Text>
              No {noun} in stock begins with this CUID. Check the number on the {noun}
              {whoami.deviceCreation ? ', then type all of it (digits only) to add it' : ', or have it imported first (an administrator imports devices)'}.
            </Text>
          ) : null}
          {mayAdd ? (
            <Stack gap="xs" component="section" aria-label={`Add ${noun} ${typed.trim()}`}>
              <Text size="sm">
                No {noun} {typed.trim()} is on file. Add it to stock with the ATR its reader shows, then issue it.
              </Text>
              <Group align="flex-end">
                <TextInput
                  label="ATR"
                  description="Hexadecimal, as the reader shows it"
                  value={atr}
                  onChange={(event) => setAtr(event.currentTarget.value.replace(/\s+/g, ''))}
                  error={atr && !ATR.test(atr) ? 'An even number of hexadecimal digits, 4 to 66' : add.error?.message}
                />
                <Button variant="default" disabled={!ATR.test(atr)} loading={add.isPending} onClick={() => add.mutate()}>
                  Add {noun} {typed.trim()} to stock
                </Button>
              </Group>
            </Stack>
          ) : null}
          <Select
            label="Device policy"
            description="What the device carries"
            placeholder="Choose a policy"
            data={offered.map((p) => ({ value: p.id!, label: p.name ?? p.id! }))}
            value={policy}
            onChange={setPolicy}
            allowDeselect={false}
            searchable
            nothingFoundMessage={issuing === 'otp' ? 'No policy carrying only OTP credentials has this name' : 'No policy has this name'}
            required
          />
          <ErrorText error={policies.error} />
          {chosenPolicy ? (
            <Text size="sm">
              Credentials: {(chosenPolicy.credentialTypes ?? []).join(', ') || 'none'}
              {chosenPolicy.requiresApproval === false ? '; no approval needed' : '; another operator approves it'}
            </Text>
          ) : null}
          <ErrorText error={issue.error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" disabled={!device || !policy} loading={issue.isPending}>
              {device ? `Issue ${noun} ${cuidOf(device)}` : 'Issue'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
