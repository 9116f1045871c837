import { Button, Code, CopyButton, Divider, Group, Modal, PasswordInput, Stack, Table, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, answer, done } from '../api/client';
import type { AdminUser, ListResponse } from '../api/resources';
import { DateTime } from '../components/date-time';
import { ErrorText } from '../components/error-text';
import { HiddenHeader } from '../components/hidden-header';
import { Notice } from '../components/notice';

/** A live browser session as the admin API lists it (GET .../users/{id}/sessions): never its cookie. */
interface SessionView {
  id: string;
  amr: string[];
  authTime: string;
  lastSeen: string;
  idleExpires: string;
  absoluteExpires: string;
  sourceAddress: string | null;
  userAgent: string | null;
}

const METHODS: Record<string, string> = { pwd: 'password', otp: 'one-time code', sc: 'smart card', hwk: 'passkey' };
const methods = (amr: string[]) => amr.map((method) => METHODS[method] ?? method).join(' + ');

/**
 * A person's live browser sessions (DECISIONS 14.2): when and how each was opened, when it was last
 * used and from where; end one or all (audited as session.end, reason administrator; the grant rules
 * of DECISIONS 5.3 apply on the server).
 */
export function UserSessionsDialog({ org, user, onClose }: { org: string; user: AdminUser; onClose: () => void }) {
  const queryClient = useQueryClient();
  const key = ['user-sessions', org, user.id];
  const sessions = useQuery({
    queryKey: key,
    queryFn: () => answer<ListResponse<SessionView>>(api.GET('/admin/v1/organizations/{org}/users/{id}/sessions', { params: { path: { org, id: user.id } } })),
  });
  const [ended, setEnded] = useState<string | null>(null);
  const endOne = useMutation({
    mutationFn: (session: SessionView) =>
      done(api.DELETE('/admin/v1/organizations/{org}/users/{id}/sessions/{sessionId}', { params: { path: { org, id: user.id, sessionId: session.id } } })),
    onSuccess: async () => {
      setEnded('Session ended.');
      await queryClient.invalidateQueries({ queryKey: key });
    },
  });
  const endAll = useMutation({
    mutationFn: () => done(api.DELETE('/admin/v1/organizations/{org}/users/{id}/sessions', { params: { path: { org, id: user.id } } })),
    onSuccess: async () => {
      setEnded('All sessions ended.');
      await queryClient.invalidateQueries({ queryKey: key });
    },
  });
  const list = sessions.data?.Resources ?? [];
  return (
    <Modal opened onClose={onClose} title={`Sessions of ${user.userName}`} size="xl">
      <Stack>
        <ErrorText error={sessions.error ?? endOne.error ?? endAll.error} />
        {ended ? <Text role="status">{ended}</Text> : null}
        {sessions.isSuccess && list.length === 0 ? (
          <Text>{user.userName} has no live browser session. They get one when they sign in at the login page.</Text>
        ) : null}
        {list.length > 0 ? (
          <Table striped aria-label={`Sessions of ${user.userName}`}>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Signed in</Table.Th>
                <Table.Th>With</Table.Th>
                <Table.Th>Last used</Table.Th>
                <Table.Th>Ends at the latest</Table.Th>
                <Table.Th>From</Table.Th>
                <HiddenHeader>Actions</HiddenHeader>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {list.map((session) => (
                <Table.Tr key={session.id}>
                  <Table.Td>
                    <DateTime iso={session.authTime} />
                  </Table.Td>
                  <Table.Td>{methods(session.amr)}</Table.Td>
                  <Table.Td>
                    <DateTime iso={session.lastSeen} />
                  </Table.Td>
                  <Table.Td>
                    <DateTime iso={session.absoluteExpires} />
                  </Table.Td>
                  <Table.Td title={session.userAgent ?? undefined}>{session.sourceAddress ?? 'unknown'}</Table.Td>
                  <Table.Td>
                    <Button
                      size="xs"
                      variant="default"
                      aria-label={`End the session signed in ${new Date(session.authTime).toLocaleString()}`}
                      loading={endOne.isPending && endOne.variables?.id === session.id}
                      onClick={() => endOne.mutate(session)}
                    >
                      End
                    </Button>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        ) : null}
        <Group justify="space-between">
          <Text size="sm">Ending a session signs the person out of it at once, and of the applications they reached through it.</Text>
          <Button color="red" disabled={list.length === 0} loading={endAll.isPending} onClick={() => endAll.mutate()}>
            End all sessions
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

/**
 * How a person signs in, and getting them back in (Keycloak's "Credentials" tab; DECISIONS 17.2):
 * an enrolment link (they choose a new password and add an authenticator app; shown once here, to
 * pass on), or a password set by the administrator (cardholders only: an operator signs in with a
 * certificate). Either way their earlier enrolment links stop working; a new password also ends their
 * browser sessions.
 */
export function UserSignInDialog({ org, user, onClose, onChanged }: { org: string; user: AdminUser; onClose: () => void; onChanged: () => void }) {
  const [password, setPassword] = useState('');
  const link = useMutation({
    mutationFn: () =>
      answer<{ url: string; expiresAt: string }>(
        api.POST('/admin/v1/organizations/{org}/users/{id}/enrolment-link', { params: { path: { org, id: user.id } } }),
      ),
  });
  const setNew = useMutation({
    mutationFn: () => done(api.PUT('/admin/v1/organizations/{org}/users/{id}/password', { params: { path: { org, id: user.id } }, body: { password } })),
    onSuccess: () => {
      setPassword('');
      onChanged();
    },
  });
  return (
    <Modal opened onClose={onClose} title={`Sign-in of ${user.userName}`} size="lg">
      <Stack>
        <Text size="sm">
          {user.userType === 'operator'
            ? "No administrator sets an operator's password: they sign in with an enrolled certificate (Edit enrols one), or with what an enrolment link lets them choose."
            : user.hasPassword
              ? 'They have a password.'
              : 'They have no password yet.'}
        </Text>
        <Title order={2} size="h4">
          Enrolment link
        </Title>
        <Text size="sm">
          A one-time link to the login page where they choose a new password and add an authenticator app. Their earlier links stop working; their current
          password works until they use it.
        </Text>
        {link.data ? (
          <Stack gap="xs">
            <Notice title="Pass the link on now">
              <Text size="sm">It is shown only this once. Send it to {user.displayName ?? user.userName} by a channel you trust.</Text>
            </Notice>
            <Text size="sm" fw={500} id="enrolment-link-label">
              Enrolment link
            </Text>
            {/* Wrapped, not scrolled: a scrolling region would need to take focus (axe scrollable-region-focusable). */}
            <Code block aria-labelledby="enrolment-link-label" style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-all' }}>
              {link.data.url}
            </Code>
            <Group justify="space-between">
              <Text size="sm">
                Expires <DateTime iso={link.data.expiresAt} />
              </Text>
              <CopyButton value={link.data.url}>
                {({ copied, copy }) => (
                  <Button variant={copied ? 'filled' : 'default'} onClick={copy}>
                    {copied ? 'Copied' : 'Copy link'}
                  </Button>
                )}
              </CopyButton>
            </Group>
          </Stack>
        ) : (
          <Button variant="default" w="fit-content" loading={link.isPending} onClick={() => link.mutate()} data-autofocus>
            Make an enrolment link
          </Button>
        )}
        <ErrorText error={link.error} />
        {user.userType === 'cardholder' ? (
          <>
            <Divider />
            <form
              onSubmit={(event) => {
                event.preventDefault();
                setNew.mutate();
              }}
            >
              <Stack>
                <Title order={2} size="h4">
                  Set a password
                </Title>
                <PasswordInput
                  label="New password"
                  description="12 characters or more. Their browser sessions end; tell them the password by a separate channel."
                  value={password}
                  onChange={(event) => setPassword(event.currentTarget.value)}
                  autoComplete="new-password"
                  error={setNew.error?.message}
                />
                {setNew.isSuccess ? <Text role="status">Password set; their sessions have ended.</Text> : null}
                <Button type="submit" variant="default" w="fit-content" disabled={password === ''} loading={setNew.isPending}>
                  Set password
                </Button>
              </Stack>
            </form>
          </>
        ) : null}
      </Stack>
    </Modal>
  );
}
