import { Button, Group, Paper, Select, Stack, Switch, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { ApiError, api, answer } from '../api/client';
import type { Organization, OrganizationSettings } from '../api/resources';
import { ErrorText } from '../components/error-text';

type Field = keyof OrganizationSettings;
const FIELDS: Field[] = ['automaticDeviceCreation', 'applicationIdPolicy', 'passwordGrant', 'passwordOnlySignIn', 'accessTokenLifetime'];

/**
 * The server's 400 at the field it names: the admin API's detail reads "Invalid settings: <field>:
 * <reason>; <field>: <reason>." (DECISIONS 7, the SCIM error's detail), so each part goes to its input.
 */
export function fieldErrors<F extends string>(error: unknown, fields: readonly F[]): { byField: Partial<Record<F, string>>; rest?: string } {
  if (!(error instanceof ApiError) || error.status !== 400) return { byField: {}, rest: error instanceof Error ? error.message : undefined };
  const byField: Partial<Record<F, string>> = {};
  const body = error.message.replace(/^Invalid [^:]*: /, '').replace(/\.$/, '');
  for (const part of body.split('; ')) {
    const field = fields.find((name) => part.startsWith(`${name}: `) || part.startsWith(`${name}.`));
    if (field) byField[field] = part.slice(part.indexOf(': ') + 2);
  }
  return Object.keys(byField).length > 0 ? { byField } : { byField, rest: error.message };
}

/**
 * The organization's settings as a form (DECISIONS 17): each with what it means, saved with
 * If-Match on the version read, so that a change made meanwhile is not overwritten (412, said so).
 */
export function SettingsForm({ org, organization }: { org: string; organization: Organization }) {
  const queryClient = useQueryClient();
  const initial = organization.settings;
  const [automaticDeviceCreation, setAutomatic] = useState(initial.automaticDeviceCreation);
  const [applicationIdPolicy, setPolicy] = useState<'any' | 'certified'>(initial.applicationIdPolicy);
  const [passwordGrant, setPasswordGrant] = useState(initial.passwordGrant);
  const [passwordOnlySignIn, setPasswordOnly] = useState(initial.passwordOnlySignIn);
  const [lifetime, setLifetime] = useState(initial.accessTokenLifetime === null ? '' : String(initial.accessTokenLifetime));
  const [saved, setSaved] = useState(false);
  const save = useMutation({
    mutationFn: () =>
      answer<OrganizationSettings>(
        api.PUT('/admin/v1/organizations/{org}/settings', {
          params: { path: { org }, header: { 'If-Match': `W/"${organization.meta.version}"` } },
          body: {
            automaticDeviceCreation,
            applicationIdPolicy,
            passwordGrant,
            passwordOnlySignIn,
            // Sent as typed: the server decides what is valid and says so at the field.
            accessTokenLifetime: lifetime.trim() === '' ? null : Number(lifetime),
          },
        }),
      ),
    onMutate: () => setSaved(false),
    onSuccess: async () => {
      setSaved(true);
      await queryClient.invalidateQueries({ queryKey: ['organization', org] });
    },
  });
  /** After a 412: the current values from the server, the person's edits dropped. */
  const reload = async () => {
    await queryClient.refetchQueries({ queryKey: ['organization', org], exact: true });
    const fresh = queryClient.getQueryData<Organization>(['organization', org])?.settings;
    if (!fresh) return;
    setAutomatic(fresh.automaticDeviceCreation);
    setPolicy(fresh.applicationIdPolicy);
    setPasswordGrant(fresh.passwordGrant);
    setPasswordOnly(fresh.passwordOnlySignIn);
    setLifetime(fresh.accessTokenLifetime === null ? '' : String(fresh.accessTokenLifetime));
    save.reset();
  };
  const { byField, rest } = fieldErrors(save.error, FIELDS);
  const stale = save.error instanceof ApiError && save.error.status === 412;
  return (
    <Paper withBorder p="md" component="section" aria-labelledby="settings-title">
      <form
        onSubmit={(event) => {
          event.preventDefault();
          save.mutate();
        }}
      >
        <Stack>
          <Title order={2} size="h3" id="settings-title">
            Settings
          </Title>
          <Switch
            label="Automatic device creation"
            description="Clients may create a card's device resource (POST /Device) when it was not imported first. Off: devices come only from an import."
            checked={automaticDeviceCreation}
            onChange={(event) => setAutomatic(event.currentTarget.checked)}
            error={byField.automaticDeviceCreation}
          />
          <Select
            label="Application-ID policy"
            description="Any: every application may call the API. Certified: only the applications listed under Certified applications."
            data={[
              { value: 'any', label: 'Any application' },
              { value: 'certified', label: 'Certified applications only' },
            ]}
            value={applicationIdPolicy}
            onChange={(value) => value && setPolicy(value as 'any' | 'certified')}
            allowDeselect={false}
            error={byField.applicationIdPolicy}
            maw={420}
          />
          <Switch
            label="Password grant"
            description="Cardholders may get a token with their user name and password (OAuth password grant). Operators and administrators always need their certificate."
            checked={passwordGrant}
            onChange={(event) => setPasswordGrant(event.currentTarget.checked)}
            error={byField.passwordGrant}
          />
          <Switch
            label="Password-only sign-in"
            description="On the sign-in page, a cardholder without an authenticator app may sign in with the password alone. Turning it off ends the sessions opened that way."
            checked={passwordOnlySignIn}
            onChange={(event) => setPasswordOnly(event.currentTarget.checked)}
            error={byField.passwordOnlySignIn}
          />
          <TextInput
            label="Access token lifetime (seconds)"
            description="How long an access token is valid: 300 to 86400 seconds. Empty: the service's default."
            inputMode="numeric"
            value={lifetime}
            onChange={(event) => setLifetime(event.currentTarget.value)}
            error={byField.accessTokenLifetime}
            maw={420}
          />
          {stale ? (
            <Text c="red.8" role="alert">
              Someone changed these settings since this page read them. Reload to see the current values, then make your change again.
            </Text>
          ) : (
            <ErrorText error={rest ? { message: rest } : null} />
          )}
          <Group>
            <Button type="submit" loading={save.isPending}>
              Save settings
            </Button>
            {stale ? (
              <Button variant="default" onClick={() => void reload()}>
                Reload settings
              </Button>
            ) : null}
            <Text size="sm" role="status">
              {saved && !save.isPending ? 'Settings saved.' : ''}
            </Text>
          </Group>
        </Stack>
      </form>
    </Paper>
  );
}
