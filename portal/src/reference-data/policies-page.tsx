import { Button, Checkbox, Group, Paper, Select, Stack, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { api, answer } from '../api/client';
import type { paths } from '../api/schema';
import { ErrorText } from '../components/error-text';
import { fieldErrors } from '../components/field-errors';
import { Loading } from '../components/pages';
import { ifMatch } from './queries';

type CredentialPolicy = paths['/admin/v1/organizations/{org}/credential-policy']['get']['responses'][200]['content']['application/json'];
type WalletPolicy = paths['/admin/v1/organizations/{org}/wallet-policy']['get']['responses'][200]['content']['application/json'];

const KEY_ALGORITHMS = [
  { value: 'EC-P256', label: 'EC P-256' },
  { value: 'EC-P384', label: 'EC P-384' },
  { value: 'RSA-2048', label: 'RSA 2048' },
  { value: 'RSA-3072', label: 'RSA 3072' },
  { value: 'RSA-4096', label: 'RSA 4096' },
] as const;

/**
 * The organization's credential policy and wallet policy: one of each (id `global`), so a form each
 * rather than a list (DECISIONS 17.2). Each is saved with If-Match, the version read: a change made
 * meanwhile by someone else is refused (412) with the server's sentence, and read again.
 */
export function PoliciesPage() {
  const { org } = useParams({ strict: false }) as { org: string };
  const credential = useQuery({
    queryKey: ['credential-policy', org],
    queryFn: () => answer<CredentialPolicy>(api.GET('/admin/v1/organizations/{org}/credential-policy', { params: { path: { org } } })),
  });
  const wallet = useQuery({
    queryKey: ['wallet-policy', org],
    queryFn: () => answer<WalletPolicy>(api.GET('/admin/v1/organizations/{org}/wallet-policy', { params: { path: { org } } })),
  });
  // A saved form is read again (its new version), so its state starts afresh: the confirmation lives here.
  const [saved, setSaved] = useState<string | null>(null);
  return (
    <Stack>
      <Title order={1}>Credential and wallet policies</Title>
      <Text size="sm">The rules every device policy issues under. Until someone saves a policy, its defaults apply.</Text>
      <ErrorText error={credential.error ?? wallet.error} />
      {saved ? <Text role="status">{saved}</Text> : null}
      {credential.data ? (
        <CredentialPolicyForm
          key={`credential-${credential.data.meta.version}`}
          org={org}
          policy={credential.data}
          onSaved={() => setSaved('Credential policy saved.')}
        />
      ) : (
        <Loading />
      )}
      {wallet.data ? (
        <WalletPolicyForm key={`wallet-${wallet.data.meta.version}`} org={org} policy={wallet.data} onSaved={() => setSaved('Wallet policy saved.')} />
      ) : null}
    </Stack>
  );
}

/** What was typed, as a number when it is one; anything else is sent as typed, for the server to name the problem at the field. */
const wholeNumber = (text: string): number => (/^\s*-?\d+\s*$/.test(text) ? Number(text) : (text as unknown as number));

function CredentialPolicyForm({ org, policy, onSaved }: { org: string; policy: CredentialPolicy; onSaved: () => void }) {
  const queryClient = useQueryClient();
  const [lifetime, setLifetime] = useState(String(policy.certificateLifetimeDays ?? 365));
  const [algorithms, setAlgorithms] = useState<string[]>(policy.keyAlgorithms ?? []);
  const [digits, setDigits] = useState(String(policy.oathDigits ?? 6));
  const [period, setPeriod] = useState(String(policy.oathPeriod ?? 30));
  const [revokeOnTerminate, setRevokeOnTerminate] = useState(policy.revokeOnTerminate ?? true);
  const save = useMutation({
    mutationFn: () =>
      answer<CredentialPolicy>(
        api.PUT('/admin/v1/organizations/{org}/credential-policy', {
          params: { path: { org } },
          body: {
            certificateLifetimeDays: wholeNumber(lifetime),
            keyAlgorithms: algorithms as NonNullable<CredentialPolicy['keyAlgorithms']>,
            oathDigits: Number(digits) as 6 | 8,
            oathPeriod: Number(period) as 30 | 60,
            revokeOnTerminate,
          },
          headers: ifMatch(policy.meta.version),
        }),
      ),
    onSuccess: (stored) => {
      onSaved();
      queryClient.setQueryData(['credential-policy', org], stored);
    },
  });
  const errors = fieldErrors(save.error, ['certificateLifetimeDays', 'keyAlgorithms', 'oathDigits', 'oathPeriod', 'revokeOnTerminate'] as const);
  return (
    <Paper withBorder p="md" component="section" aria-labelledby="credential-policy-title">
      <form
        onSubmit={(event) => {
          event.preventDefault();
          save.mutate();
        }}
      >
        <Stack>
          <Title order={2} size="h3" id="credential-policy-title">
            Credential policy
          </Title>
          <TextInput
            label="Certificate lifetime (days)"
            description="How long a certificate issued to a card is valid: 1 to 1825 days, never past the CA's own expiry"
            inputMode="numeric"
            value={lifetime}
            onChange={(event) => setLifetime(event.currentTarget.value)}
            error={errors.at.certificateLifetimeDays}
          />
          <Checkbox.Group
            label="Key algorithms"
            description="The key pairs a card may generate for its certificate"
            value={algorithms}
            onChange={setAlgorithms}
            error={errors.at.keyAlgorithms}
          >
            <Group mt={4}>
              {KEY_ALGORITHMS.map((algorithm) => (
                <Checkbox key={algorithm.value} value={algorithm.value} label={algorithm.label} />
              ))}
            </Group>
          </Checkbox.Group>
          <Select
            label="One-time code digits"
            description="Digits of each code an OTP token shows"
            data={['6', '8']}
            value={digits}
            onChange={(value) => setDigits(value ?? digits)}
            allowDeselect={false}
            error={errors.at.oathDigits}
          />
          <Select
            label="One-time code period (seconds)"
            description="How long a time-based code is valid"
            data={['30', '60']}
            value={period}
            onChange={(value) => setPeriod(value ?? period)}
            allowDeselect={false}
            error={errors.at.oathPeriod}
          />
          <Checkbox
            label="Revoke certificates when a device is terminated"
            description="A terminated card's certificates go on the CRL at once"
            checked={revokeOnTerminate}
            onChange={(event) => setRevokeOnTerminate(event.currentTarget.checked)}
          />
          <ErrorText error={errors.rest ? { message: errors.rest } : null} />
          <Button type="submit" loading={save.isPending} w="fit-content">
            Save credential policy
          </Button>
        </Stack>
      </form>
    </Paper>
  );
}

function WalletPolicyForm({ org, policy, onSaved }: { org: string; policy: WalletPolicy; onSaved: () => void }) {
  const queryClient = useQueryClient();
  const [maxDevices, setMaxDevices] = useState(String(policy.maxDevicesPerWallet ?? 3));
  const [selfService, setSelfService] = useState(policy.allowSelfService ?? true);
  const save = useMutation({
    mutationFn: () =>
      answer<WalletPolicy>(
        api.PUT('/admin/v1/organizations/{org}/wallet-policy', {
          params: { path: { org } },
          body: { maxDevicesPerWallet: wholeNumber(maxDevices), allowSelfService: selfService },
          headers: ifMatch(policy.meta.version),
        }),
      ),
    onSuccess: (stored) => {
      onSaved();
      queryClient.setQueryData(['wallet-policy', org], stored);
    },
  });
  const errors = fieldErrors(save.error, ['maxDevicesPerWallet', 'allowSelfService'] as const);
  return (
    <Paper withBorder p="md" component="section" aria-labelledby="wallet-policy-title">
      <form
        onSubmit={(event) => {
          event.preventDefault();
          save.mutate();
        }}
      >
        <Stack>
          <Title order={2} size="h3" id="wallet-policy-title">
            Wallet policy
          </Title>
          <TextInput
            label="Devices per person"
            description="How many live devices (assigned, produced, issued or on hold) one person's wallet may hold: 1 to 20"
            inputMode="numeric"
            value={maxDevices}
            onChange={(event) => setMaxDevices(event.currentTarget.value)}
            error={errors.at.maxDevicesPerWallet}
          />
          <Checkbox
            label="People may resume their own devices"
            description="A cardholder may resume a device they suspended, without the help desk"
            checked={selfService}
            onChange={(event) => setSelfService(event.currentTarget.checked)}
          />
          <ErrorText error={errors.rest ? { message: errors.rest } : null} />
          <Button type="submit" loading={save.isPending} w="fit-content">
            Save wallet policy
          </Button>
        </Stack>
      </form>
    </Paper>
  );
}
