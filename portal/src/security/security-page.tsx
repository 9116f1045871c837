import { Button, Group, Modal, Paper, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useParams } from '@tanstack/react-router';
import { useEffect, useState } from 'react';
import { api, answer, done } from '../api/client';
import type { Whoami } from '../api/resources';
import type { paths } from '../api/schema';
import { DateTime } from '../components/date-time';
import { ErrorText } from '../components/error-text';
import { HiddenHeader } from '../components/hidden-header';
import { Loading } from '../components/pages';
import { whoamiQuery } from '../session/whoami';

type Factor = NonNullable<
  paths['/credential-management/customer/{org}/whoami/factors']['get']['responses'][200]['content']['application/json']['Resources']
>[number];
type Session = NonNullable<
  paths['/credential-management/customer/{org}/whoami/sessions']['get']['responses'][200]['content']['application/json']['Resources']
>[number];

/** What the portal calls each factor type. */
const TYPE_NAMES: Record<string, string> = { OATH_TOTP: 'Authenticator app (one-time codes)', FIDO2: 'Passkey' };

const factorsQuery = (org: string) => ({
  queryKey: ['own-factors', org],
  queryFn: () => answer<{ Resources: Factor[] }>(api.GET('/credential-management/customer/{org}/whoami/factors', { params: { path: { org } } })),
});
const sessionsQuery = (org: string) => ({
  queryKey: ['own-sessions', org],
  queryFn: () => answer<{ Resources: Session[] }>(api.GET('/credential-management/customer/{org}/whoami/sessions', { params: { path: { org } } })),
});

/**
 * The hosted login page asking the person to sign in again, then back here (DECISIONS 14.6: adding or
 * removing a factor needs a recent sign-in; `prompt=login` is the authorization endpoint's way too).
 */
function signInAgain(org: string): void {
  const query = new URLSearchParams({ return_to: `/portal/${org}/security`, prompt: 'login' });
  window.location.assign(`/authentication/customer/${encodeURIComponent(org)}/login?${query.toString()}`);
}

/**
 * Whether the session's sign-in still counts as recent, counted on the browser's clock from the
 * durations whoami answered at `readAt` (so a skewed clock does not matter), re-checked every second.
 */
function useRecentSignIn(whoami: Whoami | undefined, readAt: number): boolean {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = window.setInterval(() => setNow(Date.now()), 1000);
    return () => window.clearInterval(timer);
  }, []);
  const session = whoami?.session;
  if (!session) return false;
  // A few seconds of margin: the call must reach the service while the sign-in still counts.
  return (session.signedInSecondsAgo + 5) * 1000 + (now - readAt) < session.recentSignInSeconds * 1000;
}

/**
 * The person's own Security page (/portal/{org}/security; DECISIONS 14.6): their second factors
 * (rename, remove but never the last one they need, add another through the hosted enrolment page)
 * and their browser sessions (end one, or every other).
 */
export function SecurityPage() {
  const { org } = useParams({ from: '/$org/security' });
  const { data: whoami, dataUpdatedAt } = useQuery({ ...whoamiQuery(org), staleTime: 0, refetchOnMount: 'always' });
  const recent = useRecentSignIn(whoami, dataUpdatedAt);
  return (
    <Stack>
      <Title order={1}>Security</Title>
      <Text>How you sign in, and where you are signed in.</Text>
      <Factors org={org} recent={recent} />
      <Sessions org={org} />
    </Stack>
  );
}

function Factors({ org, recent }: { org: string; recent: boolean }) {
  const factors = useQuery(factorsQuery(org));
  const [renaming, setRenaming] = useState<Factor | null>(null);
  const [removing, setRemoving] = useState<Factor | null>(null);
  const add = useMutation({
    mutationFn: () => answer<{ url: string }>(api.POST('/credential-management/customer/{org}/whoami/factor-enrolments', { params: { path: { org } } })),
    // The hosted page enrols the factor and sends the browser back here.
    onSuccess: (ticket) => window.location.assign(ticket.url),
  });
  const list = factors.data?.Resources ?? [];
  return (
    <Paper withBorder p="md" component="section" aria-labelledby="factors-title">
      <Stack>
        <Group justify="space-between">
          <Title order={2} size="h3" id="factors-title">
            Second factors
          </Title>
          <Button loading={add.isPending} aria-describedby={recent ? undefined : 'add-factor-note'} onClick={() => (recent ? add.mutate() : signInAgain(org))}>
            Add a second factor
          </Button>
        </Group>
        {recent ? null : (
          <Text size="sm" c="dimmed" id="add-factor-note">
            Adding or removing a factor asks you to sign in again first.
          </Text>
        )}
        <ErrorText error={add.error} />
        {factors.error ? <ErrorText error={factors.error} /> : null}
        {!factors.data && !factors.error ? <Loading /> : null}
        {factors.data && list.length === 0 ? (
          <Text>
            You have no second factor yet. Choose “Add a second factor”, then scan the code with an authenticator app on your phone or create a passkey.
          </Text>
        ) : null}
        {list.length > 0 ? (
          <Table aria-labelledby="factors-title">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Type</Table.Th>
                <Table.Th>Added</Table.Th>
                <Table.Th>Last used</Table.Th>
                <HiddenHeader>Actions</HiddenHeader>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {list.map((factor) => (
                <Table.Tr key={factor.id}>
                  <Table.Td>
                    <span title={`Credential ${factor.id}`}>{factor.name}</span>
                    {factor.status === 'ON_HOLD' ? ' (suspended)' : null}
                  </Table.Td>
                  <Table.Td>{TYPE_NAMES[factor.type] ?? factor.type}</Table.Td>
                  <Table.Td>
                    <DateTime iso={factor.created} />
                  </Table.Td>
                  <Table.Td>{factor.lastUsed ? <DateTime iso={factor.lastUsed} /> : 'Not yet'}</Table.Td>
                  <Table.Td>
                    <Group gap="xs" wrap="nowrap">
                      <Button size="xs" variant="default" aria-label={`Rename ${factor.name}`} onClick={() => setRenaming(factor)}>
                        Rename
                      </Button>
                      <Button
                        size="xs"
                        variant="default"
                        aria-label={`Remove ${factor.name}`}
                        disabled={!factor.removable}
                        aria-describedby={factor.removable ? undefined : `refusal-${factor.id}`}
                        onClick={() => setRemoving(factor)}
                      >
                        Remove
                      </Button>
                    </Group>
                    {factor.removalRefusal ? (
                      <Text size="xs" c="dimmed" id={`refusal-${factor.id}`} maw={320}>
                        {factor.removalRefusal}
                      </Text>
                    ) : null}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        ) : null}
      </Stack>
      {renaming ? <RenameFactor org={org} factor={renaming} onClose={() => setRenaming(null)} /> : null}
      {removing ? <RemoveFactor org={org} factor={removing} recent={recent} onClose={() => setRemoving(null)} /> : null}
    </Paper>
  );
}

/** Renames a factor; the server's reason shows at the field. */
function RenameFactor({ org, factor, onClose }: { org: string; factor: Factor; onClose: () => void }) {
  const queryClient = useQueryClient();
  const [name, setName] = useState(factor.name);
  const rename = useMutation({
    mutationFn: () =>
      answer<Factor>(api.PATCH('/credential-management/customer/{org}/whoami/factors/{id}', { params: { path: { org, id: factor.id } }, body: { name } })),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: ['own-factors', org] });
      onClose();
    },
  });
  return (
    <Modal opened onClose={onClose} title={`Rename ${factor.name}`}>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          rename.mutate();
        }}
      >
        <Stack>
          <TextInput
            label="Name"
            description="1 to 64 characters, for you to tell your factors apart"
            value={name}
            onChange={(event) => setName(event.currentTarget.value)}
            maxLength={64}
            required
            error={rename.error?.message}
            data-autofocus
          />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={rename.isPending}>
              Save
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

/** Asks once, naming the factor; an old sign-in is asked to sign in again first. */
function RemoveFactor({ org, factor, recent, onClose }: { org: string; factor: Factor; recent: boolean; onClose: () => void }) {
  const queryClient = useQueryClient();
  const remove = useMutation({
    mutationFn: () => done(api.DELETE('/credential-management/customer/{org}/whoami/factors/{id}', { params: { path: { org, id: factor.id } } })),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: ['own-factors', org] });
      onClose();
    },
  });
  return (
    <Modal opened onClose={onClose} title={`Remove ${factor.name}?`}>
      <Stack>
        {recent ? (
          <Text size="sm">It is revoked at once and no longer signs you in. Delete the account from the app on your phone too.</Text>
        ) : (
          <Text size="sm">For your safety, removing a factor needs a recent sign-in. Sign in again, then remove it.</Text>
        )}
        <ErrorText error={remove.error} />
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          {recent ? (
            <Button color="red.9" loading={remove.isPending} onClick={() => remove.mutate()} data-autofocus>
              Remove
            </Button>
          ) : (
            <Button onClick={() => signInAgain(org)} data-autofocus>
              Sign in again
            </Button>
          )}
        </Group>
      </Stack>
    </Modal>
  );
}

/** A session as a person recognises it: the browser it was opened in. */
function browserOf(session: Session): string {
  return session.userAgent ?? 'Unknown browser';
}

function Sessions({ org }: { org: string }) {
  const queryClient = useQueryClient();
  const sessions = useQuery(sessionsQuery(org));
  const [endingOthers, setEndingOthers] = useState(false);
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['own-sessions', org] });
  const endOne = useMutation({
    mutationFn: (id: string) =>
      done(api.DELETE('/credential-management/customer/{org}/whoami/sessions/{sessionId}', { params: { path: { org, sessionId: id } } })),
    onSuccess: refresh,
  });
  const endOthers = useMutation({
    mutationFn: () => answer<{ endedSessions: number }>(api.DELETE('/credential-management/customer/{org}/whoami/sessions', { params: { path: { org } } })),
    onSuccess: async () => {
      await refresh();
      setEndingOthers(false);
    },
  });
  const list = sessions.data?.Resources ?? [];
  const others = list.filter((session) => !session.current).length;
  return (
    <Paper withBorder p="md" component="section" aria-labelledby="sessions-title">
      <Stack>
        <Group justify="space-between">
          <Title order={2} size="h3" id="sessions-title">
            Where you are signed in
          </Title>
          <Button variant="default" disabled={others === 0} onClick={() => setEndingOthers(true)}>
            Sign out everywhere else
          </Button>
        </Group>
        {sessions.error ? <ErrorText error={sessions.error} /> : null}
        {!sessions.data && !sessions.error ? <Loading /> : null}
        {list.length > 0 ? (
          <Table aria-labelledby="sessions-title">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Browser</Table.Th>
                <Table.Th>Address</Table.Th>
                <Table.Th>Signed in</Table.Th>
                <Table.Th>Last seen</Table.Th>
                <HiddenHeader>Actions</HiddenHeader>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {list.map((session) => (
                <Table.Tr key={session.id}>
                  <Table.Td>
                    <span title={`Session ${session.id}`}>{browserOf(session)}</span>
                  </Table.Td>
                  <Table.Td>{session.sourceAddress ?? 'Unknown'}</Table.Td>
                  <Table.Td>
                    <DateTime iso={session.created} />
                  </Table.Td>
                  <Table.Td>
                    <DateTime iso={session.lastSeen} />
                  </Table.Td>
                  <Table.Td>
                    {session.current ? (
                      <Text size="sm" fw={700}>
                        This session
                      </Text>
                    ) : (
                      <Button
                        size="xs"
                        variant="default"
                        loading={endOne.isPending && endOne.variables === session.id}
                        onClick={() => endOne.mutate(session.id)}
                      >
                        End session
                      </Button>
                    )}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        ) : null}
        {sessions.data && others === 0 ? <Text>You are signed in nowhere else. Sessions in other browsers appear here, and you can end them.</Text> : null}
        <ErrorText error={endOne.error} />
      </Stack>
      <Modal opened={endingOthers} onClose={() => setEndingOthers(false)} title="Sign out everywhere else?">
        <Stack>
          <Text size="sm">
            Your {others === 1 ? 'other session ends' : `${others} other sessions end`} at once, with what applications hold through them. This one stays signed
            in.
          </Text>
          <ErrorText error={endOthers.error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setEndingOthers(false)}>
              Cancel
            </Button>
            <Button loading={endOthers.isPending} onClick={() => endOthers.mutate()} data-autofocus>
              Sign out everywhere else
            </Button>
          </Group>
        </Stack>
      </Modal>
    </Paper>
  );
}
