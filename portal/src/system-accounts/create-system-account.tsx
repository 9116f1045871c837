import { Button, Checkbox, Group, Modal, Select, Stack, Text, TextInput, Textarea } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import { ApiError, api, answer } from '../api/client';
import type { CreatedSystemAccount } from '../api/resources';
import { OneTimeSecret } from '../components/one-time-secret';
import { rolesQuery } from './queries';

/** Create a system account; then its first secret is shown once, in this dialog only. */
export function CreateSystemAccount({ org, opened, onClose }: { org: string; opened: boolean; onClose: () => void }) {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const roles = useQuery({ ...rolesQuery(), enabled: opened });
  const [suffix, setSuffix] = useState('');
  const [role, setRole] = useState<string | null>(null);
  const [administrator, setAdministrator] = useState(false);
  const [description, setDescription] = useState('');
  const [created, setCreated] = useState<CreatedSystemAccount | null>(null);
  const create = useMutation({
    mutationFn: () =>
      answer<CreatedSystemAccount>(
        api.POST('/admin/v1/organizations/{org}/system-accounts', {
          params: { path: { org } },
          body: { role: role ?? '', organizationAdministrator: administrator, ...(suffix ? { suffix } : {}), ...(description ? { description } : {}) },
        }),
      ),
    onSuccess: (account) => {
      setCreated(account);
      void queryClient.invalidateQueries({ queryKey: ['system-accounts', org] });
    },
  });
  const close = () => {
    // The secret leaves memory with the dialog.
    setCreated(null);
    setSuffix('');
    setRole(null);
    setAdministrator(false);
    setDescription('');
    create.reset();
    onClose();
  };
  const fieldError = (field: string) => (create.error instanceof ApiError && create.error.message.includes(field) ? create.error.message : undefined);
  const error = create.error instanceof Error ? create.error.message : undefined;
  return (
    <Modal opened={opened} onClose={close} title={created ? `System account ${created.clientId} created` : 'Create a system account'} size="lg">
      {created ? (
        <Stack>
          <Text size="sm">
            Client ID <strong>{created.clientId}</strong> authenticates at <code>{created.tokenUrl}</code>.
          </Text>
          <OneTimeSecret label="Client secret" value={created.secret.value} expiresAt={created.secret.expiresAt} />
          <Group justify="flex-end">
            <Button variant="default" onClick={() => void navigate({ to: '/$org/system-accounts/$clientId', params: { org, clientId: created.clientId } })}>
              Open the account
            </Button>
            <Button onClick={close}>Done</Button>
          </Group>
        </Stack>
      ) : (
        <form
          onSubmit={(event) => {
            event.preventDefault();
            create.mutate();
          }}
        >
          <Stack>
            <TextInput
              label="Client ID suffix"
              description={`Optional: the Client ID becomes ${org}-<suffix>; a random one otherwise`}
              value={suffix}
              onChange={(event) => setSuffix(event.currentTarget.value)}
              error={fieldError('suffix')}
              data-autofocus
            />
            <Select
              label="Role"
              required
              data={roles.data?.Resources.map((r) => r.name) ?? []}
              value={role}
              onChange={setRole}
              error={fieldError('role')}
              searchable
            />
            <Checkbox label="Organization administrator" checked={administrator} onChange={(event) => setAdministrator(event.currentTarget.checked)} />
            <Textarea label="Description" value={description} onChange={(event) => setDescription(event.currentTarget.value)} maxLength={500} autosize />
            {error && !fieldError('suffix') && !fieldError('role') ? (
              <Text c="red.8" role="alert">
                {error}
              </Text>
            ) : null}
            <Group justify="flex-end">
              <Button variant="default" onClick={close}>
                Cancel
              </Button>
              <Button type="submit" loading={create.isPending} disabled={!role}>
                Create
              </Button>
            </Group>
          </Stack>
        </form>
      )}
    </Modal>
  );
}
