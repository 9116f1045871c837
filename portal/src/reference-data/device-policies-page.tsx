import { Button, Checkbox, Group, Modal, MultiSelect, Stack, Table, Text, TextInput, Textarea, Title } from '@mantine/core';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api, answer, done } from '../api/client';
import { ErrorText } from '../components/error-text';
import { fieldErrors } from '../components/field-errors';
import { HiddenHeader } from '../components/hidden-header';
import { ListFooter } from '../components/list-footer';
import { ConfirmDelete, RowActions, useNamedObjectList } from './named-object-list';
import { PAGE, allGroupsQuery, devicePoliciesQuery, ifMatch, type DevicePolicy } from './queries';

/** The credential types a device policy may carry (CREDENTIAL-MANAGEMENT.md "Resources"), as a person reads them. */
const CREDENTIAL_TYPES = [
  { value: 'PKI_CERTIFICATE', label: 'Certificate (PKI key pair on the card)' },
  { value: 'OATH_TOTP', label: 'One-time codes, time-based (TOTP)' },
  { value: 'OATH_HOTP', label: 'One-time codes, counter-based (HOTP)' },
  { value: 'STATIC_PASSWORD', label: 'Static password' },
] as const;
const typeLabel = (value: string) => CREDENTIAL_TYPES.find((type) => type.value === value)?.label.replace(/ \(.*\)$/, '') ?? value;

/** Device policies: what goes on which device for whom; listed by name, created, edited and deleted (admin API). */
export function DevicePoliciesPage() {
  const list = useNamedObjectList({
    list: devicePoliciesQuery,
    queryKey: 'device-policies',
    remove: (org, policy) => done(api.DELETE('/admin/v1/organizations/{org}/device-policies/{id}', { params: { path: { org, id: policy.id } } })),
  });
  const { query: policies, total } = list;
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1}>Device policies</Title>
        <Button onClick={list.add}>Create device policy</Button>
      </Group>
      <Text size="sm">What the desk issues on a device: its credential types, for which card models and groups, and whether a second operator approves.</Text>
      <ErrorText error={policies.error} />
      <Table striped aria-label="Device policies">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Name</Table.Th>
            <Table.Th>Credentials</Table.Th>
            <Table.Th>Device types</Table.Th>
            <Table.Th>Groups</Table.Th>
            <Table.Th>Approval</Table.Th>
            <HiddenHeader>Actions</HiddenHeader>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {policies.data?.Resources.map((policy) => (
            <Table.Tr key={policy.id}>
              <Table.Td title={policy.id}>{policy.name}</Table.Td>
              <Table.Td>{(policy.credentialTypes ?? []).map(typeLabel).join(', ')}</Table.Td>
              <Table.Td>{policy.deviceTypes?.length ? policy.deviceTypes.join(', ') : 'Any'}</Table.Td>
              <Table.Td>{policy.groups?.length ? policy.groups.map((group) => group.display ?? group.value).join(', ') : 'Everyone'}</Table.Td>
              <Table.Td>{policy.requiresApproval ? 'Second operator' : 'None'}</Table.Td>
              <RowActions name={policy.name} onEdit={() => list.edit(policy)} onDelete={() => list.askDelete(policy)} />
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {policies.isSuccess && total === 0 ? (
        <Text>No device policy yet. Create one with Create device policy: the desk needs one to issue a card or a token.</Text>
      ) : null}
      <ListFooter loaded={Boolean(policies.data)} total={total} noun="device policy" pageSize={PAGE} page={list.page} onPage={list.setPage} />
      {list.editing !== undefined ? <DevicePolicyForm org={list.org} policy={list.editing} onClose={list.closeEditor} onSaved={list.saved} /> : null}
      <ConfirmDelete
        list={list}
        name={(policy) => policy.name}
        action="Delete device policy"
        consequence="The desk can no longer issue with it. A policy that open requests or issued devices name is kept: the server says which."
      />
    </Stack>
  );
}

const FIELDS = ['name', 'description', 'credentialTypes', 'deviceTypes', 'groups', 'requiresApproval', 'activationRequired'] as const;
const lines = (text: string) =>
  text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);

/** Create (policy null) or edit a device policy: each field says what it means; the server's 400 is shown at its field. */
function DevicePolicyForm({ org, policy, onClose, onSaved }: { org: string; policy: DevicePolicy | null; onClose: () => void; onSaved: () => void }) {
  const groups = useQuery(allGroupsQuery(org));
  const [name, setName] = useState(policy?.name ?? '');
  const [description, setDescription] = useState(policy?.description ?? '');
  const [credentialTypes, setCredentialTypes] = useState<string[]>(policy?.credentialTypes ?? ['PKI_CERTIFICATE']);
  const [deviceTypes, setDeviceTypes] = useState((policy?.deviceTypes ?? []).join('\n'));
  const [groupIds, setGroupIds] = useState<string[]>((policy?.groups ?? []).map((group) => group.value ?? '').filter(Boolean));
  const [requiresApproval, setRequiresApproval] = useState(policy?.requiresApproval ?? true);
  const [activationRequired, setActivationRequired] = useState(policy?.activationRequired ?? false);
  const save = useMutation({
    mutationFn: () => {
      const body = {
        name,
        description: description.trim() ? description.trim() : null,
        credentialTypes: credentialTypes as DevicePolicy['credentialTypes'] & string[],
        deviceTypes: lines(deviceTypes),
        groups: groupIds,
        requiresApproval,
        activationRequired,
      };
      return policy
        ? answer(
            api.PATCH('/admin/v1/organizations/{org}/device-policies/{id}', {
              params: { path: { org, id: policy.id } },
              body,
              headers: ifMatch(policy.meta?.version),
            }),
          )
        : answer(api.POST('/admin/v1/organizations/{org}/device-policies', { params: { path: { org } }, body }));
    },
    onSuccess: onSaved,
  });
  const errors = fieldErrors(save.error, FIELDS, 'name');
  // Groups the policy names stay choosable even beyond the first page of groups.
  const groupOptions = new Map((policy?.groups ?? []).map((group) => [group.value ?? '', group.display ?? group.value ?? '']));
  for (const group of groups.data?.Resources ?? []) groupOptions.set(group.id, group.displayName ?? group.id);
  return (
    <Modal opened onClose={onClose} title={policy ? `Edit ${policy.name}` : 'Create a device policy'} size="lg">
      <form
        onSubmit={(event) => {
          event.preventDefault();
          save.mutate();
        }}
      >
        <Stack>
          <TextInput
            label="Name"
            description="How operators pick it at the desk; unique in the organization"
            required
            value={name}
            onChange={(event) => setName(event.currentTarget.value)}
            error={errors.at.name}
            data-autofocus
          />
          <Textarea
            label="Description"
            description="Optional: what it is for"
            value={description}
            onChange={(event) => setDescription(event.currentTarget.value)}
            autosize
            minRows={1}
            error={errors.at.description}
          />
          <Checkbox.Group
            label="Credential types"
            description="What is put on the device at issuance"
            value={credentialTypes}
            onChange={setCredentialTypes}
            error={errors.at.credentialTypes}
          >
            <Stack gap={4} mt={4}>
              {CREDENTIAL_TYPES.map((type) => (
                <Checkbox key={type.value} value={type.value} label={type.label} />
              ))}
            </Stack>
          </Checkbox.Group>
          <Textarea
            label="Device types"
            description="Card or token models it applies to, one a line; none means any device"
            value={deviceTypes}
            onChange={(event) => setDeviceTypes(event.currentTarget.value)}
            autosize
            minRows={2}
            error={errors.at.deviceTypes}
          />
          <MultiSelect
            label="Groups"
            description="Only members of these groups may get it; none means everyone"
            data={[...groupOptions].map(([value, label]) => ({ value, label }))}
            value={groupIds}
            onChange={setGroupIds}
            searchable
            clearable
            error={errors.at.groups}
          />
          <Checkbox
            label="A second operator approves each request"
            description="Four eyes: the operator who asks for the device cannot approve it"
            checked={requiresApproval}
            onChange={(event) => setRequiresApproval(event.currentTarget.checked)}
            error={errors.at.requiresApproval}
          />
          <Checkbox
            label="Activation required"
            description="An encoded device stays on hold until it is activated"
            checked={activationRequired}
            onChange={(event) => setActivationRequired(event.currentTarget.checked)}
            error={errors.at.activationRequired}
          />
          <ErrorText error={errors.rest ? { message: errors.rest } : null} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={save.isPending}>
              {policy ? 'Save' : 'Create'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
