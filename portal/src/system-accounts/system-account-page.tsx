import { Button, Checkbox, Group, Modal, Paper, Select, Stack, Table, Text, Textarea, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient, useSuspenseQuery } from '@tanstack/react-query';
import { useNavigate, useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { api, answer, done } from '../api/client';
import type { Certificate, IssuedSecret, OidcClient, SystemAccount } from '../api/resources';
import { ConfirmByTyping } from '../components/confirm-by-typing';
import { OneTimeSecret } from '../components/one-time-secret';
import { certificatesQuery, oidcClientQuery, rolesQuery, secretsQuery, systemAccountQuery } from './queries';
import { HiddenHeader } from '../components/hidden-header';
import { ErrorText } from '../components/error-text';
import { DateTime } from '../components/date-time';
import { ErrorPage, Loading } from '../components/pages';

/** One system account: its properties, state, secrets, certificates and sign-in (OpenID Connect client) settings. */
export function SystemAccountPage() {
  const { org, clientId } = useParams({ from: '/$org/system-accounts/$clientId' });
  const read = useQuery(systemAccountQuery(org, clientId));
  if (read.error) return <ErrorPage error={read.error} />;
  const account = read.data;
  if (!account) return <Loading />;
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1}>{account.clientId}</Title>
        <Text fw={600} size="sm" span>
          {account.disabled ? 'Disabled' : 'Enabled'}
        </Text>
      </Group>
      <Text size="sm">
        Token URL: <code>{account.tokenUrl}</code>
      </Text>
      <Properties org={org} account={account} />
      <Secrets org={org} clientId={clientId} />
      <Certificates org={org} clientId={clientId} />
      <SignInSettings org={org} clientId={clientId} setUp={account.oidcClient} />
      <Lifecycle org={org} account={account} />
    </Stack>
  );
}

function useAccountMutation<T, V = void>(org: string, _clientId: string, fn: (variables: V) => Promise<T>) {
  const queryClient = useQueryClient();
  return useMutation({ mutationFn: fn, onSuccess: () => void queryClient.invalidateQueries({ queryKey: ['system-accounts', org] }) });
}

function Properties({ org, account }: { org: string; account: SystemAccount }) {
  const roles = useQuery(rolesQuery());
  const [role, setRole] = useState<string | null>(account.role);
  const [description, setDescription] = useState(account.description ?? '');
  const [administrator, setAdministrator] = useState(account.organizationAdministrator);
  const save = useAccountMutation(org, account.clientId, () =>
    answer<SystemAccount>(
      api.PATCH('/admin/v1/organizations/{org}/system-accounts/{clientId}', {
        params: { path: { org, clientId: account.clientId } },
        body: { role: role ?? account.role, description: description === '' ? null : description, organizationAdministrator: administrator },
      }),
    ),
  );
  return (
    <Paper withBorder p="md" component="section" aria-labelledby="properties-title">
      <form
        onSubmit={(event) => {
          event.preventDefault();
          save.mutate();
        }}
      >
        <Stack>
          <Title order={2} size="h3" id="properties-title">
            Properties
          </Title>
          <Select label="Role" data={roles.data?.Resources.map((r) => r.name) ?? [account.role]} value={role} onChange={setRole} searchable />
          <Textarea label="Description" value={description} onChange={(event) => setDescription(event.currentTarget.value)} maxLength={500} autosize />
          <Checkbox label="Organization administrator" checked={administrator} onChange={(event) => setAdministrator(event.currentTarget.checked)} />
          <ErrorText error={save.error} />
          {save.isSuccess ? <Text role="status">Saved. The account's live tokens follow the change at once.</Text> : null}
          <Button type="submit" loading={save.isPending} w="fit-content">
            Save
          </Button>
        </Stack>
      </form>
    </Paper>
  );
}

function Secrets({ org, clientId }: { org: string; clientId: string }) {
  const { data } = useSuspenseQuery(secretsQuery(org, clientId));
  const [adding, setAdding] = useState(false);
  const [expiresAt, setExpiresAt] = useState('');
  const [issued, setIssued] = useState<IssuedSecret | null>(null);
  const add = useAccountMutation(org, clientId, () =>
    answer<IssuedSecret>(
      api.POST('/admin/v1/organizations/{org}/system-accounts/{clientId}/secrets', {
        params: { path: { org, clientId } },
        body: expiresAt ? { expiresAt: new Date(expiresAt).toISOString() } : {},
      }),
    ),
  );
  const revoke = useAccountMutation(org, clientId, (secretId: string) =>
    done(api.DELETE('/admin/v1/organizations/{org}/system-accounts/{clientId}/secrets/{secretId}', { params: { path: { org, clientId, secretId } } })),
  );
  const close = () => {
    setIssued(null);
    setExpiresAt('');
    add.reset();
    setAdding(false);
  };
  return (
    <Paper withBorder p="md" component="section" aria-labelledby="secrets-title">
      <Stack>
        <Group justify="space-between">
          <Title order={2} size="h3" id="secrets-title">
            Secrets
          </Title>
          <Button variant="default" onClick={() => setAdding(true)}>
            Add secret
          </Button>
        </Group>
        <Table aria-labelledby="secrets-title">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Id</Table.Th>
              <Table.Th>Created</Table.Th>
              <Table.Th>Expires</Table.Th>
              <Table.Th>Last used</Table.Th>
              <HiddenHeader>Actions</HiddenHeader>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {data.Resources.map((secret) => (
              <Table.Tr key={secret.id}>
                <Table.Td>
                  <code>{secret.id.slice(0, 8)}</code>
                </Table.Td>
                <Table.Td>
                  <DateTime iso={secret.created} />
                </Table.Td>
                <Table.Td>
                  <DateTime iso={secret.expiresAt} />
                </Table.Td>
                <Table.Td>
                  <DateTime iso={secret.lastUsed} />
                </Table.Td>
                <Table.Td>
                  <Button size="xs" variant="default" aria-label={`Revoke secret ${secret.id.slice(0, 8)}`} onClick={() => revoke.mutate(secret.id)}>
                    Revoke
                  </Button>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
        {data.Resources.length === 0 ? (
          <Text>No secret: the account authenticates only with a certificate, if it has one. Add a secret to give it one.</Text>
        ) : null}
        <ErrorText error={revoke.error} />
      </Stack>
      <Modal opened={adding} onClose={close} title="Add a secret">
        {issued ? (
          <Stack>
            <OneTimeSecret label="New client secret" value={issued.value} expiresAt={issued.expiresAt} />
            <Button onClick={close} w="fit-content">
              Done
            </Button>
          </Stack>
        ) : (
          <form
            onSubmit={(event) => {
              event.preventDefault();
              add.mutate(undefined, { onSuccess: setIssued });
            }}
          >
            <Stack>
              <TextInput
                label="Expires"
                description="Optional; 5 years from now otherwise"
                type="datetime-local"
                value={expiresAt}
                onChange={(event) => setExpiresAt(event.currentTarget.value)}
                error={add.error?.message}
                data-autofocus
              />
              <Button type="submit" loading={add.isPending} w="fit-content">
                Add secret
              </Button>
            </Stack>
          </form>
        )}
      </Modal>
    </Paper>
  );
}

function Certificates({ org, clientId }: { org: string; clientId: string }) {
  const { data } = useSuspenseQuery(certificatesQuery(org, clientId));
  const [pem, setPem] = useState('');
  const upload = useAccountMutation(org, clientId, () =>
    answer<Certificate>(
      api.POST('/admin/v1/organizations/{org}/system-accounts/{clientId}/certificates', { params: { path: { org, clientId } }, body: { pem } }),
    ),
  );
  const remove = useAccountMutation(org, clientId, (thumbprint: string) =>
    done(
      api.DELETE('/admin/v1/organizations/{org}/system-accounts/{clientId}/certificates/{thumbprint}', {
        params: { path: { org, clientId, thumbprint } },
      }),
    ),
  );
  return (
    <Paper withBorder p="md" component="section" aria-labelledby="certificates-title">
      <Stack>
        <Title order={2} size="h3" id="certificates-title">
          Certificates
        </Title>
        <Table aria-labelledby="certificates-title">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Thumbprint</Table.Th>
              <Table.Th>Subject</Table.Th>
              <Table.Th>Valid until</Table.Th>
              <Table.Th>Registration expires</Table.Th>
              <HiddenHeader>Actions</HiddenHeader>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {data.Resources.map((certificate) => (
              <Table.Tr key={certificate.id}>
                <Table.Td>
                  <code>{certificate.id}</code>
                </Table.Td>
                <Table.Td>{certificate.subject}</Table.Td>
                <Table.Td>
                  <DateTime iso={certificate.notAfter} />
                </Table.Td>
                <Table.Td>
                  <DateTime iso={certificate.expiresAt} />
                </Table.Td>
                <Table.Td>
                  <Button size="xs" variant="default" aria-label={`Delete certificate ${certificate.id}`} onClick={() => remove.mutate(certificate.id)}>
                    Delete
                  </Button>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
        {data.Resources.length === 0 ? <Text>No certificate: paste or choose one below for the account's signed assertions.</Text> : null}
        <form
          onSubmit={(event) => {
            event.preventDefault();
            upload.mutate(undefined, { onSuccess: () => setPem('') });
          }}
        >
          <Stack>
            <Textarea
              label="Certificate (PEM)"
              description="Paste one X.509 certificate, RSA 2048+ or EC P-256/P-384, or choose its file"
              value={pem}
              onChange={(event) => setPem(event.currentTarget.value)}
              autosize
              minRows={4}
              styles={{ input: { fontFamily: 'monospace' } }}
              error={upload.error?.message}
            />
            <Group>
              <input
                type="file"
                accept=".pem,.crt,.cer"
                aria-label="Certificate file"
                onChange={async (event) => {
                  const file = event.currentTarget.files?.[0];
                  if (file) setPem(await file.text());
                }}
              />
              <Button type="submit" loading={upload.isPending} disabled={pem.trim() === ''}>
                Upload certificate
              </Button>
            </Group>
            {upload.isSuccess ? <Text role="status">Certificate added.</Text> : null}
          </Stack>
        </form>
      </Stack>
    </Paper>
  );
}

/** URIs as typed, one a line; blank lines dropped. */
const lines = (text: string) =>
  text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');

/**
 * The account as a client of the authorization code flow: redirect URIs and flags, edited in a
 * dialog. The settings are read only when the dialog opens, and only for an account that is set up
 * (`oidcClient`): the API answers 404 for one that is not, which the browser would log (DECISIONS 17).
 */
function SignInSettings({ org, clientId, setUp }: { org: string; clientId: string; setUp: boolean }) {
  // Whether the account was set up when the dialog opened: saving sets it up, and the dialog keeps its form meanwhile.
  const [editing, setEditing] = useState<{ setUp: boolean } | null>(null);
  return (
    <Paper withBorder p="md" component="section" aria-labelledby="sign-in-title">
      <Stack>
        <Title order={2} size="h3" id="sign-in-title">
          Sign-in (OpenID Connect client)
        </Title>
        <Text size="sm">Redirect URIs and settings for the authorization code flow, where people sign in to the application this account stands for.</Text>
        <Button variant="default" w="fit-content" onClick={() => setEditing({ setUp })}>
          Edit redirect URIs
        </Button>
      </Stack>
      <Modal opened={editing !== null} onClose={() => setEditing(null)} title="Sign-in settings" size="lg">
        {editing?.setUp ? <SignInSettingsForm org={org} clientId={clientId} /> : null}
        {editing && !editing.setUp ? <SignInSettingsFields org={org} clientId={clientId} current={null} /> : null}
      </Modal>
    </Paper>
  );
}

function SignInSettingsForm({ org, clientId }: { org: string; clientId: string }) {
  const settings = useQuery(oidcClientQuery(org, clientId));
  if (settings.isPending) return <Text role="status">Loading…</Text>;
  if (settings.error) {
    return (
      <Text c="red.8" role="alert">
        {settings.error.message}
      </Text>
    );
  }
  return <SignInSettingsFields org={org} clientId={clientId} current={settings.data} />;
}

function SignInSettingsFields({ org, clientId, current }: { org: string; clientId: string; current: OidcClient | null }) {
  const queryClient = useQueryClient();
  const [redirectUris, setRedirectUris] = useState((current?.redirectUris ?? []).join('\n'));
  const [postLogout, setPostLogout] = useState((current?.postLogoutRedirectUris ?? []).join('\n'));
  const [publicClient, setPublicClient] = useState(current?.publicClient ?? false);
  const [firstParty, setFirstParty] = useState(current?.firstParty ?? false);
  const [refreshTokens, setRefreshTokens] = useState(current?.refreshTokens ?? false);
  const save = useMutation({
    mutationFn: () =>
      answer<OidcClient>(
        api.PUT('/admin/v1/organizations/{org}/system-accounts/{clientId}/oidc-client', {
          params: { path: { org, clientId } },
          body: { redirectUris: lines(redirectUris), postLogoutRedirectUris: lines(postLogout), publicClient, firstParty, refreshTokens },
        }),
      ),
    onSuccess: async (saved) => {
      queryClient.setQueryData(oidcClientQuery(org, clientId).queryKey, saved);
      // The account now says it is set up (oidcClient), so the next opening reads its settings.
      await queryClient.invalidateQueries({ queryKey: systemAccountQuery(org, clientId).queryKey, exact: true });
    },
  });
  // The server's reason, shown at the field it names (its detail names the attribute).
  const reason = save.error?.message;
  const postLogoutError = reason?.includes('postLogoutRedirectUris') ? reason : undefined;
  const redirectError = reason && !postLogoutError ? reason : undefined;
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        save.mutate();
      }}
    >
      <Stack>
        {current ? null : <Text size="sm">This account is not set up for sign-in yet: saving sets it up.</Text>}
        <Textarea
          label="Redirect URIs"
          description="One a line, matched exactly: https, or http on 127.0.0.1, [::1] or localhost"
          value={redirectUris}
          onChange={(event) => setRedirectUris(event.currentTarget.value)}
          autosize
          minRows={2}
          error={redirectError}
          data-autofocus
        />
        <Textarea
          label="Post-logout redirect URIs"
          description="One a line; optional"
          value={postLogout}
          onChange={(event) => setPostLogout(event.currentTarget.value)}
          autosize
          minRows={1}
          error={postLogoutError}
        />
        <Checkbox
          label="Public client"
          description="PKCE only, no client authentication at the token endpoint"
          checked={publicClient}
          onChange={(event) => setPublicClient(event.currentTarget.checked)}
        />
        <Checkbox
          label="First party"
          description="People are not asked for consent"
          checked={firstParty}
          onChange={(event) => setFirstParty(event.currentTarget.checked)}
        />
        <Checkbox label="Refresh tokens" checked={refreshTokens} onChange={(event) => setRefreshTokens(event.currentTarget.checked)} />
        {save.isSuccess ? <Text role="status">Saved.</Text> : null}
        <Button type="submit" loading={save.isPending} w="fit-content">
          Save sign-in settings
        </Button>
      </Stack>
    </form>
  );
}

function Lifecycle({ org, account }: { org: string; account: SystemAccount }) {
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [deleting, setDeleting] = useState(false);
  const toggle = useAccountMutation(org, account.clientId, () =>
    answer<SystemAccount>(
      api.PATCH('/admin/v1/organizations/{org}/system-accounts/{clientId}', {
        params: { path: { org, clientId: account.clientId } },
        body: { disabled: !account.disabled },
      }),
    ),
  );
  const remove = useMutation({
    mutationFn: () => done(api.DELETE('/admin/v1/organizations/{org}/system-accounts/{clientId}', { params: { path: { org, clientId: account.clientId } } })),
    onSuccess: async () => {
      queryClient.removeQueries({ queryKey: ['system-accounts', org, account.clientId] });
      await queryClient.invalidateQueries({ queryKey: ['system-accounts', org] });
      await navigate({ to: '/$org/system-accounts', params: { org } });
    },
  });
  return (
    <Paper withBorder p="md" component="section" aria-labelledby="lifecycle-title">
      <Stack>
        <Title order={2} size="h3" id="lifecycle-title">
          Disable or delete
        </Title>
        <Text size="sm">
          {account.disabled
            ? 'The account is disabled: the token endpoint refuses it. Enabling it lets it obtain new tokens; the tokens it held stay revoked.'
            : 'Disabling stops the account at once: its tokens stop working and the token endpoint refuses it.'}
        </Text>
        <ErrorText error={toggle.error} />
        <Group>
          <Button variant="default" loading={toggle.isPending} onClick={() => toggle.mutate()}>
            {account.disabled ? 'Enable account' : 'Disable account'}
          </Button>
          <Button color="red" onClick={() => setDeleting(true)}>
            Delete account
          </Button>
        </Group>
      </Stack>
      <ConfirmByTyping
        opened={deleting}
        onClose={() => {
          remove.reset();
          setDeleting(false);
        }}
        title={`Delete ${account.clientId}`}
        name={account.clientId}
        action="Delete account"
        consequence="Its secrets, certificates and tokens go with it, and its tokens stop working at once. This cannot be undone."
        onConfirm={() => remove.mutate()}
        pending={remove.isPending}
        error={remove.error?.message}
      />
    </Paper>
  );
}
