import { Anchor, Button, Code, CopyButton, Group, List, Modal, Paper, Radio, Select, SimpleGrid, Stack, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate, useParams } from '@tanstack/react-router';
import { api, answer } from '../api/client';
import type { paths } from '../api/schema';
import { DateTime } from '../components/date-time';
import { ErrorText } from '../components/error-text';
import { Loading, NotFoundPage } from '../components/pages';
import { can, useWhoami } from '../session/whoami';
import { CredentialsTable } from './credentials';
import { History } from '../audit/history';
import { DeviceMoves, SEARCH_REQUEST, deviceName, scimString, type Device } from './desk-page';

type DeviceList = paths['/aims/rs/scim/v2/Device/.search']['post']['responses'][200]['content']['application/scim+json'];
type DevicePolicy = paths['/aims/rs/scim/v2/DevicePolicy/{id}']['get']['responses'][200]['content']['application/scim+json'];

/**
 * A device as an operator reads it (/portal/{org}/devices/{id}): its CUID, ATR, status and reason,
 * owner, policy, dates, the lifecycle moves the role allows, its credentials with their
 * certificates, and (for administrators, from the audit log) its history. The device is looked up
 * with a search by id, which answers an unknown id with no result rather than a 404, so that a
 * stale link shows the not-found page with nothing logged.
 */
export function DevicePage() {
  const { org, id } = useParams({ from: '/$org/devices/$id' });
  const whoami = useWhoami(org);
  const found = useQuery({
    queryKey: ['device-lookup', id],
    queryFn: () =>
      answer<DeviceList>(api.POST('/aims/rs/scim/v2/Device/.search', { body: { schemas: [SEARCH_REQUEST], filter: `id eq ${scimString(id)}`, count: 1 } })),
  });
  // The same cache entry as the lists' rows, so that a move made here shows everywhere.
  const device = useQuery({
    queryKey: ['device', id],
    queryFn: () => answer<Device>(api.GET('/aims/rs/scim/v2/Device/{id}', { params: { path: { id } } })),
    enabled: found.data?.totalResults === 1,
    initialData: found.data?.Resources[0],
  });
  if (found.error) return <ErrorText error={found.error} />;
  if (found.data?.totalResults === 0) return <NotFoundPage />;
  if (!device.data) return <Loading />;
  const data = device.data;
  const name = deviceName(data, id);
  const status = data.status?.status ?? '';
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1}>{name.charAt(0).toUpperCase() + name.slice(1)}</Title>
        <Group gap="xs">
          <DeviceMoves org={org} id={id} name={name} status={status} />
          {['TERMINATED', 'AVAILABLE'].includes(status) && whoami.permissions.includes('contentRequest.recycle.create') ? (
            <Recycle org={org} id={id} name={name} />
          ) : null}
          {status === 'ISSUED' && whoami.permissions.includes('contentRequest.unlockPin.create') ? <UnlockPin org={org} id={id} name={name} /> : null}
          {status === 'ISSUED' &&
          ['contentRequest.issuance.create', 'contentRequest.validate', 'devicePolicy.search'].every((p) => whoami.permissions.includes(p)) ? (
            <Update org={org} id={id} name={name} />
          ) : null}
        </Group>
      </Group>
      <Paper withBorder p="md" component="section" aria-labelledby="device-facts-title">
        <Stack>
          <Title order={2} size="h3" id="device-facts-title">
            Device
          </Title>
          <SimpleGrid cols={{ base: 1, sm: 2 }} component="dl" spacing="xs">
            <Fact term="CUID" value={<code>{data.externalIds?.map((e) => e.CUID).join(', ')}</code>} />
            <Fact term="ATR" value={<code>{data.externalIds?.map((e) => e.ATR).join(', ')}</code>} />
            <Fact term="Status" value={`${status}${data.status?.reason && data.status.reason !== 'NONE' ? ` (${data.status.reason})` : ''}`} />
            <Fact term="Owner" value={data.owner?.display ?? 'Nobody: in stock'} />
            <Fact term="Policy" value={data.policy?.value ? <PolicyName org={org} id={data.policy.value} /> : 'None yet'} />
            <Fact term="Issued" value={<DateTime iso={data.issuanceDate} />} />
            <Fact term="Created" value={<DateTime iso={data.meta?.created} />} />
            <Fact term="Id" value={<code>{id}</code>} />
          </SimpleGrid>
        </Stack>
      </Paper>
      <Paper withBorder p="md" component="section" aria-labelledby="device-credentials-title">
        <Stack>
          <Title order={2} size="h3" id="device-credentials-title">
            Credentials
          </Title>
          {data.credentials?.length ? (
            <CredentialsTable org={org} credentials={data.credentials} label={`Credentials of ${name}`} />
          ) : (
            <Text>No credential on this device. An issuance request, approved and encoded, puts them on it.</Text>
          )}
        </Stack>
      </Paper>
      <Paper withBorder p="md" component="section" aria-labelledby="device-history-title">
        <Stack>
          <Title order={2} size="h3" id="device-history-title">
            History
          </Title>
          {can(whoami, 'audit') ? (
            <History org={org} target={id} noun="device" />
          ) : (
            <Text>The device's history is in the audit log, which administrators read.</Text>
          )}
        </Stack>
      </Paper>
      <Anchor renderRoot={(props) => <Link {...props} to="/$org/devices" params={{ org }} />}>Back to the device search</Anchor>
    </Stack>
  );
}

/**
 * A recycle request for a terminated card (or one in stock): asked once, then the request's page,
 * where it awaits the card client's encoding (a recycle needs no approval).
 */
function Recycle({ org, id, name }: { org: string; id: string; name: string }) {
  const navigate = useNavigate();
  const [asking, setAsking] = useState(false);
  const recycle = useMutation({
    mutationFn: () =>
      answer<{ id: string }>(
        api.POST('/aims/rs/scim/v2/ContentRequest', {
          body: { schemas: ['urn:vendor:scim:api:cms:1.0:ContentRequest'], type: 'recycle', target: { device: { value: id } } },
        }),
      ),
    onSuccess: (request) => navigate({ to: '/$org/requests/$id', params: { org, id: request.id } }),
  });
  return (
    <>
      <Button size="xs" variant="default" aria-label={`Recycle ${name}`} onClick={() => setAsking(true)}>
        Recycle
      </Button>
      <Modal opened={asking} onClose={() => setAsking(false)} title={`Recycle ${name}?`}>
        <Stack>
          <Text size="sm">The card client erases the card; it then goes back to stock, without credentials, for another person.</Text>
          <ErrorText error={recycle.error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setAsking(false)}>
              Back
            </Button>
            <Button loading={recycle.isPending} onClick={() => recycle.mutate()} data-autofocus>
              Recycle
            </Button>
          </Group>
        </Stack>
      </Modal>
    </>
  );
}

const REQUEST_SCHEMA = 'urn:vendor:scim:api:cms:1.0:ContentRequest';
type PolicyList = paths['/aims/rs/scim/v2/DevicePolicy/.search']['post']['responses'][200]['content']['application/scim+json'];
type Prediction = paths['/aims/rs/scim/v2/ContentRequest/validate']['post']['responses'][200]['content']['application/scim+json'];

/**
 * Unlock the PIN of an issued card, two ways. At a card reader: an `unlock pin` request, asked
 * once, then the request's page; it needs no approval, the card client unlocks the PIN through a
 * sync session, and it expires after 10 minutes. At their PC (DECISIONS 17.1): the challenge the
 * minidriver's dialog shows is sent with the request, and the response it answers is shown once,
 * here only (never cached), for the person to type; the request is completed at once.
 */
function UnlockPin({ org, id, name }: { org: string; id: string; name: string }) {
  const navigate = useNavigate();
  const [asking, setAsking] = useState(false);
  const [way, setWay] = useState<'reader' | 'challenge'>('reader');
  const [challenge, setChallenge] = useState('');
  const [touched, setTouched] = useState(false);
  const challengeError = /^[0-9A-Fa-f]{16}$/.test(challenge.trim())
    ? undefined
    : 'Type the 16 hexadecimal digits (0-9, A-F) the person reads from their screen.';
  const unlock = useMutation({
    mutationFn: () =>
      answer<{ id: string }>(
        api.POST('/aims/rs/scim/v2/ContentRequest', { body: { schemas: [REQUEST_SCHEMA], type: 'unlock pin', target: { device: { value: id } } } }),
      ),
    onSuccess: (request) => navigate({ to: '/$org/requests/$id', params: { org, id: request.id } }),
  });
  const respond = useMutation({
    mutationFn: () =>
      answer<{ id: string; parameters?: { id: string; value: string }[] }>(
        api.POST('/aims/rs/scim/v2/ContentRequest', {
          body: {
            schemas: [REQUEST_SCHEMA],
            type: 'unlock pin',
            target: { device: { value: id } },
            parameters: [{ id: 'challenge', value: challenge.trim(), type: 'string', encoding: 'hex' }],
          },
        }),
      ),
  });
  const response = respond.data?.parameters?.find((p) => p.id === 'response')?.value;
  const close = () => {
    setAsking(false);
    setChallenge('');
    setTouched(false);
    unlock.reset();
    respond.reset();
  };
  return (
    <>
      <Button size="xs" variant="default" aria-label={`Unlock the PIN of ${name}`} onClick={() => setAsking(true)}>
        Unlock PIN
      </Button>
      <Modal opened={asking} onClose={close} title={`Unlock the PIN of ${name}?`}>
        {response !== undefined ? (
          <Stack>
            <Text size="sm">
              The PIN unlock is recorded. Read this response to the person; they type it at their PC and then set a new PIN. It is shown only this once.
            </Text>
            <Text size="sm" fw={500} id="unlock-response-label">
              Response to type at the PC
            </Text>
            <Code block aria-labelledby="unlock-response-label" fz="xl" ff="monospace">
              {response.replace(/(.{4})(?!$)/g, '$1 ')}
            </Code>
            <Group justify="flex-end">
              <CopyButton value={response}>
                {({ copied, copy }) => (
                  <Button variant={copied ? 'filled' : 'default'} onClick={copy}>
                    {copied ? 'Copied' : 'Copy response'}
                  </Button>
                )}
              </CopyButton>
              <Button onClick={close}>Done</Button>
            </Group>
          </Stack>
        ) : (
          <Stack>
            <Radio.Group label="Where is the person?" value={way} onChange={(value) => setWay(value as 'reader' | 'challenge')}>
              <Stack gap="xs" mt="xs">
                <Radio value="reader" label="At a card reader with the card client" />
                <Radio value="challenge" label="The person is at their PC (challenge and response)" />
              </Stack>
            </Radio.Group>
            {way === 'reader' ? (
              <Text size="sm">
                The card client unlocks the PIN when the holder presents the card at a reader, within 10 minutes; the holder then sets a new PIN. The card and
                its credentials keep their status.
              </Text>
            ) : (
              <TextInput
                label="Challenge shown on the person's screen"
                description="16 hexadecimal digits"
                value={challenge}
                onChange={(event) => setChallenge(event.currentTarget.value)}
                onBlur={() => setTouched(true)}
                error={touched ? challengeError : undefined}
                maxLength={20}
                autoComplete="off"
                spellCheck={false}
                ff="monospace"
              />
            )}
            <ErrorText error={way === 'reader' ? unlock.error : respond.error} />
            <Group justify="flex-end">
              <Button variant="default" onClick={close}>
                Back
              </Button>
              {way === 'reader' ? (
                <Button loading={unlock.isPending} onClick={() => unlock.mutate()} data-autofocus>
                  Unlock PIN
                </Button>
              ) : (
                <Button
                  loading={respond.isPending}
                  onClick={() => {
                    setTouched(true);
                    if (challengeError === undefined) respond.mutate();
                  }}
                >
                  Get the response
                </Button>
              )}
            </Group>
          </Stack>
        )}
      </Modal>
    </>
  );
}

/**
 * An `update` of an issued card to another device policy: `POST /ContentRequest/validate` first
 * says what the card will carry (nothing stored), then the request is filed, confirmed by that
 * same dialog, and opens on its page.
 */
function Update({ org, id, name }: { org: string; id: string; name: string }) {
  const navigate = useNavigate();
  const [asking, setAsking] = useState(false);
  const [policy, setPolicy] = useState<string | null>(null);
  const policies = useQuery({
    queryKey: ['device-policies', org],
    queryFn: () => answer<PolicyList>(api.POST('/aims/rs/scim/v2/DevicePolicy/.search', { body: { schemas: [SEARCH_REQUEST], count: 200 } })),
    enabled: asking,
  });
  const body = () => ({ schemas: [REQUEST_SCHEMA], type: 'update', target: { device: { value: id }, devicePolicy: { value: policy! } } });
  const validate = useMutation({
    mutationFn: () => answer<Prediction>(api.POST('/aims/rs/scim/v2/ContentRequest/validate', { body: body() as never })),
  });
  const file = useMutation({
    mutationFn: () => answer<{ id: string }>(api.POST('/aims/rs/scim/v2/ContentRequest', { body: body() as never })),
    onSuccess: (request) => navigate({ to: '/$org/requests/$id', params: { org, id: request.id } }),
  });
  const close = () => {
    setAsking(false);
    setPolicy(null);
    validate.reset();
    file.reset();
  };
  const policyName = policies.data?.Resources.find((p) => p.id === policy)?.name ?? '';
  return (
    <>
      <Button size="xs" variant="default" aria-label={`Update ${name}`} onClick={() => setAsking(true)}>
        Update
      </Button>
      <Modal opened={asking} onClose={close} title={`Update ${name}`}>
        <form
          onSubmit={(event) => {
            event.preventDefault();
            if (!policy) return;
            if (validate.data) file.mutate();
            else validate.mutate();
          }}
        >
          <Stack>
            <Select
              label="New device policy"
              placeholder="Choose a policy"
              data={policies.data?.Resources.map((p) => ({ value: p.id!, label: p.name ?? p.id! })) ?? []}
              value={policy}
              onChange={(value) => {
                setPolicy(value);
                validate.reset();
              }}
              allowDeselect={false}
              searchable
              required
              data-autofocus
            />
            <ErrorText error={policies.error ?? validate.error ?? file.error} />
            {validate.data ? (
              <Stack gap={4} role="status" aria-label="What the update does">
                <Text size="sm">
                  Validated: under {policyName} the card stays {validate.data.device?.status} and carries
                </Text>
                <List size="sm">
                  {(validate.data.credentials ?? []).map((credential, index) => (
                    <List.Item key={index}>
                      {credential.type}, {credential.status}
                    </List.Item>
                  ))}
                </List>
              </Stack>
            ) : null}
            <Group justify="flex-end">
              <Button variant="default" onClick={close}>
                Back
              </Button>
              <Button type="submit" disabled={!policy} loading={validate.isPending || file.isPending}>
                {validate.data ? 'File the update' : 'Validate'}
              </Button>
            </Group>
          </Stack>
        </form>
      </Modal>
    </>
  );
}

function Fact({ term, value }: { term: string; value: React.ReactNode }) {
  return (
    <div>
      <Text component="dt" size="sm" fw={700}>
        {term}
      </Text>
      <Text component="dd" ms={0}>
        {value}
      </Text>
    </div>
  );
}

/** The device policy's name, for those whose role reads policies; its id otherwise. */
function PolicyName({ org, id }: { org: string; id: string }) {
  const whoami = useWhoami(org);
  const policy = useQuery({
    queryKey: ['device-policy', id],
    queryFn: () => answer<DevicePolicy>(api.GET('/aims/rs/scim/v2/DevicePolicy/{id}', { params: { path: { id } } })),
    enabled: whoami.permissions.includes('devicePolicy.read'),
    staleTime: 60_000,
  });
  return <span title={`Device policy ${id}`}>{policy.data?.name ?? id}</span>;
}
