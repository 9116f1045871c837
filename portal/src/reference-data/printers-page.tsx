import { Button, Group, Modal, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { api, answer, done } from '../api/client';
import { ErrorText } from '../components/error-text';
import { fieldErrors } from '../components/field-errors';
import { HiddenHeader } from '../components/hidden-header';
import { ListFooter } from '../components/list-footer';
import { ConfirmDelete, RowActions, useNamedObjectList } from './named-object-list';
import { PAGE, ifMatch, printersQuery, type Printer } from './queries';

const STATUSES = [
  { value: 'READY', label: 'Ready' },
  { value: 'OFFLINE', label: 'Offline' },
];
const statusLabel = (status: string | undefined) => STATUSES.find((s) => s.value === status)?.label ?? status ?? '';

/** Card printers the desk's issuance flow may print on (CREDENTIAL-MANAGEMENT.md "DeviceFlow"). */
export function PrintersPage() {
  const list = useNamedObjectList({
    list: printersQuery,
    queryKey: 'printers',
    remove: (org, printer) => done(api.DELETE('/admin/v1/organizations/{org}/printers/{id}', { params: { path: { org, id: printer.id } } })),
  });
  const { query: printers, total } = list;
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1}>Printers</Title>
        <Button onClick={list.add}>Add printer</Button>
      </Group>
      <Text size="sm">Card printers that an assisted issuance prints the card on before encoding it.</Text>
      <ErrorText error={printers.error} />
      <Table striped aria-label="Printers">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Name</Table.Th>
            <Table.Th>Model</Table.Th>
            <Table.Th>Location</Table.Th>
            <Table.Th>Status</Table.Th>
            <HiddenHeader>Actions</HiddenHeader>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {printers.data?.Resources.map((printer) => (
            <Table.Tr key={printer.id}>
              <Table.Td title={printer.id}>{printer.name}</Table.Td>
              <Table.Td>{printer.model ?? ''}</Table.Td>
              <Table.Td>{printer.location ?? ''}</Table.Td>
              <Table.Td>{statusLabel(printer.status)}</Table.Td>
              <RowActions name={printer.name} onEdit={() => list.edit(printer)} onDelete={() => list.askDelete(printer)} />
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {printers.isSuccess && total === 0 ? <Text>No printer yet. Add one with Add printer to print cards during issuance.</Text> : null}
      <ListFooter loaded={Boolean(printers.data)} total={total} noun="printer" pageSize={PAGE} page={list.page} onPage={list.setPage} />
      {list.editing !== undefined ? <PrinterForm org={list.org} printer={list.editing} onClose={list.closeEditor} onSaved={list.saved} /> : null}
      <ConfirmDelete
        list={list}
        name={(printer) => printer.name}
        action="Delete printer"
        consequence="Issuance can no longer print on it. This cannot be undone."
      />
    </Stack>
  );
}

/** Add (printer null) or edit a printer; the server's 400 at its field. */
function PrinterForm({ org, printer, onClose, onSaved }: { org: string; printer: Printer | null; onClose: () => void; onSaved: () => void }) {
  const [name, setName] = useState(printer?.name ?? '');
  const [model, setModel] = useState(printer?.model ?? '');
  const [location, setLocation] = useState(printer?.location ?? '');
  const [status, setStatus] = useState<string>(printer?.status ?? 'READY');
  const save = useMutation({
    mutationFn: () => {
      const body = { name, model: model.trim() ? model : null, location: location.trim() ? location : null, status: status as 'READY' | 'OFFLINE' };
      return printer
        ? answer(
            api.PATCH('/admin/v1/organizations/{org}/printers/{id}', {
              params: { path: { org, id: printer.id } },
              body,
              headers: ifMatch(printer.meta?.version),
            }),
          )
        : answer(api.POST('/admin/v1/organizations/{org}/printers', { params: { path: { org } }, body }));
    },
    onSuccess: onSaved,
  });
  const errors = fieldErrors(save.error, ['name', 'model', 'location', 'status'] as const, 'name');
  return (
    <Modal opened onClose={onClose} title={printer ? `Edit ${printer.name}` : 'Add a printer'}>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          save.mutate();
        }}
      >
        <Stack>
          <TextInput
            label="Name"
            description="How operators pick it; unique in the organization"
            required
            value={name}
            onChange={(event) => setName(event.currentTarget.value)}
            error={errors.at.name}
            data-autofocus
          />
          <TextInput
            label="Model"
            description="Optional: the printer's make and model"
            value={model}
            onChange={(event) => setModel(event.currentTarget.value)}
            error={errors.at.model}
          />
          <TextInput
            label="Location"
            description="Optional: where it stands, so the card can be collected"
            value={location}
            onChange={(event) => setLocation(event.currentTarget.value)}
            error={errors.at.location}
          />
          <Select
            label="Status"
            description="Ready: it can print now; Offline: out of service"
            data={STATUSES}
            value={status}
            onChange={(value) => setStatus(value ?? status)}
            allowDeselect={false}
            error={errors.at.status}
          />
          <ErrorText error={errors.rest ? { message: errors.rest } : null} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={save.isPending}>
              {printer ? 'Save' : 'Add'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
