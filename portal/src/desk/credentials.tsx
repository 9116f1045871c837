import { Button, Group, Stack, Table, Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { api, answer } from '../api/client';
import type { paths } from '../api/schema';
import { DateTime } from '../components/date-time';
import { ErrorText } from '../components/error-text';
import { useWhoami } from '../session/whoami';

export type Credential = paths['/aims/rs/scim/v2/Credential/{id}']['get']['responses'][200]['content']['application/scim+json'];

/** A credential as a wallet or a device lists it: its id, type and status. */
export interface CredentialReference {
  value?: string;
  type?: string;
  status?: string;
}

const TYPES: Record<string, string> = {
  PKI_CERTIFICATE: 'Certificate',
  OATH_TOTP: 'OTP (TOTP)',
  OATH_HOTP: 'OTP (HOTP)',
  STATIC_PASSWORD: 'Static password',
};

/** Where a certificate stands with the CA: its status follows its device, and the CRL says the same (CREDENTIAL-MANAGEMENT.md "PKI", revocation). */
function revocationState(credential: Credential): string {
  if (credential.status === 'REVOKED') return `Revoked${credential.revocationReason ? ` (${credential.revocationReason})` : ''}: on the CRL`;
  if (credential.status === 'ON_HOLD') return 'On hold: on the CRL as certificateHold';
  return 'Not revoked';
}

/** Saves bytes as a file named `name` (a blob URL: the portal's CSP allows no data: download). */
function download(name: string, bytes: BlobPart, type: string) {
  const url = URL.createObjectURL(new Blob([bytes], { type }));
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  link.click();
  URL.revokeObjectURL(url);
}

const der = (base64: string) => Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
const pem = (base64: string) => `-----BEGIN CERTIFICATE-----\n${base64.replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`;

/**
 * The credentials of a wallet or a device, one row each: type and status, and for a certificate
 * its subject, issuer, serial, validity and revocation state, with PEM and DER downloads (EJBCA's
 * RA web shows them so). Each is read with GET /Credential/{id} when the person's role reads
 * credentials; otherwise the row shows what the list said.
 */
export function CredentialsTable({ org, credentials, label }: { org: string; credentials: CredentialReference[]; label: string }) {
  const whoami = useWhoami(org);
  const mayRead = whoami.permissions.includes('credential.read');
  return (
    <Table aria-label={label}>
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Type</Table.Th>
          <Table.Th>Status</Table.Th>
          <Table.Th>Details</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {credentials.map((credential) => (
          <CredentialRow key={credential.value} reference={credential} read={mayRead} />
        ))}
      </Table.Tbody>
    </Table>
  );
}

function CredentialRow({ reference, read }: { reference: CredentialReference; read: boolean }) {
  const id = reference.value!;
  const credential = useQuery({
    queryKey: ['credential', id],
    queryFn: () => answer<Credential>(api.GET('/aims/rs/scim/v2/Credential/{id}', { params: { path: { id } } })),
    enabled: read,
  });
  const type = credential.data?.type ?? reference.type ?? '';
  const certificate = credential.data?.certificate;
  const name = `${TYPES[type] ?? type}${certificate?.serialNumber ? ` ${certificate.serialNumber}` : ''}`;
  return (
    <Table.Tr>
      <Table.Td title={`Credential ${id}`}>{TYPES[type] ?? type}</Table.Td>
      <Table.Td>{credential.data?.status ?? reference.status}</Table.Td>
      <Table.Td>
        <ErrorText error={credential.error} />
        {certificate && credential.data ? (
          <Stack gap={2}>
            <Text size="sm">
              <b>Subject</b> {certificate.subject}
            </Text>
            <Text size="sm">
              <b>Issuer</b> {certificate.issuer}
            </Text>
            <Text size="sm">
              <b>Serial</b> <code>{certificate.serialNumber}</code>
            </Text>
            <Text size="sm">
              <b>Valid</b> <DateTime iso={certificate.notBefore} /> to <DateTime iso={certificate.notAfter} />
            </Text>
            <Text size="sm">
              <b>Revocation</b> {revocationState(credential.data)}
            </Text>
            {certificate.value ? (
              <Group gap="xs">
                <Button
                  size="xs"
                  variant="default"
                  aria-label={`Download ${name} (PEM)`}
                  onClick={() => download(`${certificate.serialNumber}.pem`, pem(certificate.value!), 'application/x-pem-file')}
                >
                  PEM
                </Button>
                <Button
                  size="xs"
                  variant="default"
                  aria-label={`Download ${name} (DER)`}
                  onClick={() => download(`${certificate.serialNumber}.cer`, der(certificate.value!), 'application/pkix-cert')}
                >
                  DER
                </Button>
              </Group>
            ) : null}
          </Stack>
        ) : null}
        {credential.data?.oath ? (
          <Text size="sm">
            {credential.data.oath.digits} digits every {credential.data.oath.period} s
          </Text>
        ) : null}
      </Table.Td>
    </Table.Tr>
  );
}
