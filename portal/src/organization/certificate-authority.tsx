import { Anchor, Button, Group, Paper, Select, Stack, Table, Text, TextInput, Textarea, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, answer } from '../api/client';
import type { CaGeneration, CertificateAuthority, ListResponse } from '../api/resources';
import { ConfirmAction } from '../components/confirm-action';
import { DateTime } from '../components/date-time';
import { downloadText } from '../components/download';
import { ErrorText } from '../components/error-text';

const KEY_ALGORITHMS = ['EC-P256', 'EC-P384', 'RSA-3072'] as const;
type KeyAlgorithm = (typeof KEY_ALGORITHMS)[number];

/** Where relying parties fetch a generation's CRL: the first generation keeps /crl (CREDENTIAL-MANAGEMENT.md, "PKI"). */
const crlPath = (org: string, generation: number) => `/pki/${encodeURIComponent(org)}/crl${generation === 1 ? '' : `/${generation}`}`;

const STATUS_LABELS: Record<string, string> = { active: 'Active', 'awaiting-certificate': 'Awaiting its certificate', retired: 'Retired' };

/**
 * The issuing CA (DECISIONS 17): its generations with their last CRL, downloads, renewal (self-signed,
 * or a CSR for the enterprise root whose certificate is then installed) and the cross-certificates
 * that link the generations. Its generations are read first, which answer an empty list for an
 * organization without a CA; the CA itself only when there is one (GET .../ca answers 404 otherwise,
 * which the browser would log).
 */
export function Authority({ org }: { org: string }) {
  const generations = useQuery({
    queryKey: ['ca-generations', org],
    queryFn: () => answer<ListResponse<CaGeneration>>(api.GET('/admin/v1/organizations/{org}/ca/generations', { params: { path: { org } } })),
  });
  const exists = (generations.data?.totalResults ?? 0) > 0;
  const ca = useQuery({
    queryKey: ['ca', org],
    queryFn: () => answer<CertificateAuthority>(api.GET('/admin/v1/organizations/{org}/ca', { params: { path: { org } } })),
    enabled: exists,
  });
  const current = generations.data?.Resources.find((generation) => generation.generation === ca.data?.generation);
  return (
    <Paper withBorder p="md" component="section" aria-labelledby="ca-title">
      <Stack>
        <Title order={2} size="h3" id="ca-title">
          Issuing CA
        </Title>
        {generations.isSuccess && !exists ? <CreateAuthority org={org} /> : null}
        <ErrorText error={generations.error ?? ca.error} />
        {ca.data ? (
          <>
            <Text size="sm">
              {ca.data.subject} · generation {ca.data.generation} · {ca.data.keyAlgorithm} · {ca.data.mode} · {STATUS_LABELS[ca.data.status] ?? ca.data.status}
              {ca.data.notAfter ? (
                <>
                  {' · valid until '}
                  <DateTime iso={ca.data.notAfter} />
                </>
              ) : null}
            </Text>
            {ca.data.compromisedAt ? (
              <Text c="red.8">
                This generation was revoked as compromised on <DateTime iso={ca.data.compromisedAt} />: it issues nothing until the CA is renewed.
              </Text>
            ) : null}
            {current?.lastCrl ? (
              <Text size="sm">
                Last CRL (number {current.lastCrl.crlNumber}) signed <DateTime iso={current.lastCrl.thisUpdate} />; next update due{' '}
                <DateTime iso={current.lastCrl.nextUpdate} />.
              </Text>
            ) : ca.data.status === 'active' ? (
              <Text size="sm">No CRL of this generation has been signed yet: the first download of its CRL signs one.</Text>
            ) : null}
            {ca.data.status === 'active' ? (
              <Group>
                <Anchor href={`/pki/${encodeURIComponent(org)}/ca.crt`} download>
                  Download the CA certificate
                </Anchor>
                {ca.data.certificate ? (
                  <Anchor component="button" type="button" onClick={() => downloadText(`${org}-ca.pem`, ca.data.certificate!)}>
                    Download the CA certificate (PEM)
                  </Anchor>
                ) : null}
                <Anchor href={`/pki/${encodeURIComponent(org)}/ca-chain.pem`} download>
                  Download the chain (PEM)
                </Anchor>
                <Anchor href={crlPath(org, ca.data.generation)} download>
                  Download the CRL
                </Anchor>
              </Group>
            ) : null}
            <AwaitingCertificate org={org} ca={ca.data} />
            <Renew org={org} ca={ca.data} />
            <Generations org={org} ca={ca.data} generations={generations.data?.Resources ?? []} />
          </>
        ) : null}
      </Stack>
    </Paper>
  );
}

/** Every generation, newest first: which key, until when, its last CRL, and the certificates linking it to the next. */
function Generations({ org, ca, generations }: { org: string; ca: CertificateAuthority; generations: CaGeneration[] }) {
  const crosses = new Map((ca.previousGenerations ?? []).map((previous) => [previous.generation, previous.crossCertificates]));
  return (
    <Stack gap="xs">
      <Title order={3} size="h4" id="ca-generations-title">
        Generations
      </Title>
      <Table aria-labelledby="ca-generations-title">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Generation</Table.Th>
            <Table.Th>Status</Table.Th>
            <Table.Th>Key</Table.Th>
            <Table.Th>Valid until</Table.Th>
            <Table.Th>Last CRL</Table.Th>
            <Table.Th>Next CRL update</Table.Th>
            <Table.Th>Downloads</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {generations.map((generation) => {
            const cross = crosses.get(generation.generation);
            return (
              <Table.Tr key={generation.generation}>
                <Table.Td>{generation.generation}</Table.Td>
                <Table.Td>
                  {STATUS_LABELS[generation.status] ?? generation.status}
                  {generation.compromisedAt ? ' (compromised)' : ''}
                </Table.Td>
                <Table.Td>
                  {generation.keyAlgorithm} · {generation.mode}
                </Table.Td>
                <Table.Td>{generation.notAfter ? <DateTime iso={generation.notAfter} date /> : 'no certificate yet'}</Table.Td>
                <Table.Td>{generation.lastCrl ? <DateTime iso={generation.lastCrl.thisUpdate} /> : 'none signed yet'}</Table.Td>
                <Table.Td>{generation.lastCrl ? <DateTime iso={generation.lastCrl.nextUpdate} /> : ''}</Table.Td>
                <Table.Td>
                  <Group gap="xs">
                    {generation.notAfter ? (
                      <Anchor
                        href={`/pki/${encodeURIComponent(org)}/ca/${generation.generation}.crt`}
                        download
                        aria-label={`Certificate of generation ${generation.generation}`}
                      >
                        Certificate
                      </Anchor>
                    ) : null}
                    {generation.notAfter ? (
                      <Anchor href={crlPath(org, generation.generation)} download aria-label={`CRL of generation ${generation.generation}`}>
                        CRL
                      </Anchor>
                    ) : null}
                    {cross ? (
                      <Anchor
                        component="button"
                        type="button"
                        aria-label={`Cross-certificates of generations ${generation.generation} and ${generation.generation + 1} (PEM)`}
                        onClick={() =>
                          downloadText(`${org}-cross-${generation.generation}-${generation.generation + 1}.pem`, cross.newWithOld + cross.oldWithNew)
                        }
                      >
                        Cross-certificates
                      </Anchor>
                    ) : null}
                  </Group>
                </Table.Td>
              </Table.Tr>
            );
          })}
        </Table.Tbody>
      </Table>
    </Stack>
  );
}

/** Renewal: a new key in the HSM; a self-signed CA issues from it at once, a subordinate one first asks the enterprise root (a CSR). */
function Renew({ org, ca }: { org: string; ca: CertificateAuthority }) {
  const queryClient = useQueryClient();
  const [opened, setOpened] = useState(false);
  const [keyAlgorithm, setKeyAlgorithm] = useState<string | null>(ca.keyAlgorithm);
  const renew = useMutation({
    mutationFn: () =>
      answer<CertificateAuthority>(
        api.POST('/admin/v1/organizations/{org}/ca/renewal', {
          params: { path: { org } },
          body: { keyAlgorithm: (keyAlgorithm ?? ca.keyAlgorithm) as KeyAlgorithm },
        }),
      ),
    onSuccess: async () => {
      setOpened(false);
      await queryClient.invalidateQueries({ queryKey: ['ca', org] });
      await queryClient.invalidateQueries({ queryKey: ['ca-generations', org] });
    },
  });
  // A renewal awaiting its certificate is finished first (the API answers 409 meanwhile).
  if (ca.status !== 'active' || ca.renewal) return null;
  const subordinate = ca.mode === 'subordinate';
  return (
    <>
      <Group>
        <Button variant="default" onClick={() => setOpened(true)}>
          Renew the CA
        </Button>
      </Group>
      <ConfirmAction
        opened={opened}
        onClose={() => {
          setOpened(false);
          renew.reset();
        }}
        title={`Renew the CA of ${org}`}
        action="Renew"
        onConfirm={() => renew.mutate()}
        pending={renew.isPending}
        error={renew.error}
      >
        <Text size="sm">
          {subordinate
            ? `A new key (generation ${ca.generation + 1}) is made in the HSM with a certificate request for your enterprise root. Generation ${ca.generation} keeps issuing until you install the certificate the root signs.`
            : `A new key (generation ${ca.generation + 1}) is made in the HSM with a self-signed certificate, and issues every certificate from now on. Generation ${ca.generation} retires: its key keeps signing its CRL and OCSP answers until its last certificate expires, and cross-certificates link the two.`}
        </Text>
        <Select label="Key algorithm of the new generation" data={[...KEY_ALGORITHMS]} value={keyAlgorithm} onChange={setKeyAlgorithm} allowDeselect={false} />
      </ConfirmAction>
    </>
  );
}

/** A subordinate CA (or its renewal) awaiting the enterprise root's certificate: the CSR to download, the certificate to install. */
function AwaitingCertificate({ org, ca }: { org: string; ca: CertificateAuthority }) {
  const queryClient = useQueryClient();
  const [pem, setPem] = useState('');
  const [opened, setOpened] = useState(false);
  const csr = ca.status === 'awaiting-certificate' ? ca.csr : ca.renewal?.csr;
  const generation = ca.status === 'awaiting-certificate' ? ca.generation : ca.renewal?.generation;
  const install = useMutation({
    mutationFn: () => answer<CertificateAuthority>(api.PUT('/admin/v1/organizations/{org}/ca/certificate', { params: { path: { org } }, body: { pem } })),
    onSuccess: async () => {
      setOpened(false);
      setPem('');
      await queryClient.invalidateQueries({ queryKey: ['ca', org] });
      await queryClient.invalidateQueries({ queryKey: ['ca-generations', org] });
    },
  });
  if (!csr) return null;
  return (
    <Stack gap="xs" component="section" aria-labelledby="ca-awaiting-title">
      <Title order={3} size="h4" id="ca-awaiting-title">
        Generation {generation} awaits its certificate
      </Title>
      <Text size="sm">
        Have this certificate request signed by your enterprise root as a CA certificate (keyCertSign, cRLSign), then paste the certificate here.
      </Text>
      <Group>
        <Button variant="default" onClick={() => downloadText(`${org}-ca-${generation}.csr`, csr, 'application/pkcs10')}>
          Download the certificate request (CSR)
        </Button>
      </Group>
      <Textarea
        label="Certificate signed by the enterprise root (PEM)"
        value={pem}
        onChange={(event) => setPem(event.currentTarget.value)}
        autosize
        minRows={3}
        placeholder="-----BEGIN CERTIFICATE-----"
      />
      <Group>
        <Button onClick={() => setOpened(true)} disabled={!pem.includes('BEGIN CERTIFICATE')}>
          Install the certificate
        </Button>
      </Group>
      <ConfirmAction
        opened={opened}
        onClose={() => {
          setOpened(false);
          install.reset();
        }}
        title={`Install the certificate of generation ${generation}`}
        action="Install"
        onConfirm={() => install.mutate()}
        pending={install.isPending}
        error={install.error}
      >
        <Text size="sm">
          Generation {generation} then issues every certificate of the organization{ca.status === 'active' ? `; generation ${ca.generation} retires` : ''}.
        </Text>
      </ConfirmAction>
    </Stack>
  );
}

/** An organization without a CA: says so and creates one, self-signed or subordinate to an enterprise root (its key made in the HSM). */
function CreateAuthority({ org }: { org: string }) {
  const queryClient = useQueryClient();
  const [keyAlgorithm, setKeyAlgorithm] = useState<string | null>('EC-P256');
  const [mode, setMode] = useState<string | null>('self-signed');
  const [subject, setSubject] = useState('');
  const [opened, setOpened] = useState(false);
  const create = useMutation({
    mutationFn: () =>
      answer<CertificateAuthority>(
        api.POST('/admin/v1/organizations/{org}/ca', {
          params: { path: { org } },
          body: {
            keyAlgorithm: (keyAlgorithm ?? 'EC-P256') as KeyAlgorithm,
            mode: (mode ?? 'self-signed') as 'self-signed' | 'subordinate',
            ...(subject.trim() ? { subject: subject.trim() } : {}),
          },
        }),
      ),
    onSuccess: async () => {
      setOpened(false);
      await queryClient.invalidateQueries({ queryKey: ['ca-generations', org] });
    },
  });
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        setOpened(true);
      }}
    >
      <Stack>
        <Text>
          The organization has no issuing CA yet, so no certificate can be issued. Create one here: self-signed, or subordinate to your enterprise root (you
          then download its certificate request and install the certificate the root signs). Its key is made in the HSM.
        </Text>
        <Group align="flex-end">
          <Select label="Key algorithm" data={[...KEY_ALGORITHMS]} value={keyAlgorithm} onChange={setKeyAlgorithm} allowDeselect={false} w={180} />
          <Select
            label="Kind"
            data={[
              { value: 'self-signed', label: 'Self-signed' },
              { value: 'subordinate', label: 'Subordinate (enterprise root)' },
            ]}
            value={mode}
            onChange={setMode}
            allowDeselect={false}
            w={240}
          />
          <TextInput
            label="Subject"
            description={`Empty: CN=${org} Issuing CA`}
            value={subject}
            onChange={(event) => setSubject(event.currentTarget.value)}
            w={280}
          />
          <Button type="submit">Create the CA</Button>
        </Group>
        <ConfirmAction
          opened={opened}
          onClose={() => {
            setOpened(false);
            create.reset();
          }}
          title={`Create the CA of ${org}`}
          action="Create"
          onConfirm={() => create.mutate()}
          pending={create.isPending}
          error={create.error}
        >
          <Text size="sm">
            {mode === 'subordinate'
              ? `A ${keyAlgorithm} key is made in the HSM with a certificate request for your enterprise root; the CA issues once its certificate is installed.`
              : `A ${keyAlgorithm} key is made in the HSM with a self-signed certificate (${subject.trim() || `CN=${org} Issuing CA`}); it issues at once.`}
          </Text>
        </ConfirmAction>
      </Stack>
    </form>
  );
}
