import { OutboundPolicy, isLoopbackHost, outboundHostProblem, z } from '@app/common';
import { AppConfig } from '@app/config';

/** How a CIBA client learns that a request was decided (OpenID CIBA Core 1.0 section 5; DECISIONS 16). */
export type TokenDeliveryMode = 'poll' | 'ping';

/** A system account's CIBA registration: null when the account is not enabled for CIBA. */
export interface BackchannelSettings {
  tokenDeliveryMode: TokenDeliveryMode;
  /** Ping mode only: where the platform POSTs `{auth_req_id}` once the person decided. */
  clientNotificationEndpoint?: string;
}

/**
 * Whether `url` is acceptable as a client notification endpoint: an absolute https URL without user
 * information or fragment (CIBA 4), or plain http to a loopback address only (a client on the same
 * host, and tests), as for the notification hub's endpoint. Answers the reason when it is not.
 */
export function notificationEndpointProblem(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'must be an absolute URL, e.g. https://client.example.com/ciba/notify';
  }
  if (parsed.username || parsed.password) return 'must not carry a user name or password';
  if (parsed.hash) return 'must not have a fragment (#...)';
  if (parsed.protocol === 'https:') return undefined;
  if (parsed.protocol === 'http:' && isLoopbackHost(parsed.hostname)) return undefined;
  return 'must use https (plain http is accepted only for a loopback address: 127.0.0.1, [::1] or localhost)';
}

/**
 * The outbound rule of CIBA pings (DECISIONS 16, the rule of DECISIONS 10.2): public addresses only,
 * loopback with BACKCHANNEL_LOOPBACK_PINGS=true. The registration and the ping apply the same one.
 */
export function notificationEndpointPolicy(config: AppConfig): OutboundPolicy {
  return { allowLoopback: config.backchannelLoopbackPings, loopbackSetting: 'BACKCHANNEL_LOOPBACK_PINGS' };
}

/**
 * Why a notification endpoint that the schema accepted may not be registered under `policy`: its host
 * is an IP literal (any spelling) or localhost that the ping would refuse. A name is not resolved
 * here; the ping decides on the address it connects to.
 */
export function notificationEndpointAddressProblem(settings: BackchannelSettings | null | undefined, policy: OutboundPolicy): string | undefined {
  if (!settings?.clientNotificationEndpoint) return undefined;
  const problem = outboundHostProblem(new URL(settings.clientNotificationEndpoint).hostname, policy);
  return problem && `backchannelAuthentication.clientNotificationEndpoint: ${problem}`;
}

/** `backchannelAuthentication` of the admin API's system accounts: enables CIBA, or (null) disables it. */
export const backchannelSettingsSchema = z
  .object(
    {
      tokenDeliveryMode: z.enum(['poll', 'ping'], { message: 'must be "poll" or "ping"' }),
      clientNotificationEndpoint: z
        .string({ message: 'must be a string' })
        .max(2048, 'must be at most 2048 characters')
        .superRefine((value, context) => {
          const problem = notificationEndpointProblem(value);
          if (problem) context.addIssue({ code: 'custom', message: problem });
        })
        .optional(),
    },
    { message: 'must be an object {tokenDeliveryMode: "poll" | "ping", clientNotificationEndpoint?} or null' },
  )
  .strict()
  .superRefine((value, context) => {
    if (value.tokenDeliveryMode === 'ping' && value.clientNotificationEndpoint === undefined) {
      context.addIssue({ code: 'custom', path: ['clientNotificationEndpoint'], message: 'is required for the ping mode: the URL the platform notifies' });
    }
    if (value.tokenDeliveryMode === 'poll' && value.clientNotificationEndpoint !== undefined) {
      context.addIssue({ code: 'custom', path: ['clientNotificationEndpoint'], message: 'is only for the ping mode; a poll client is never notified' });
    }
  })
  .nullable();

/** The settings a system-account row carries. */
export function backchannelSettingsOf(row: {
  backchannel_token_delivery_mode: TokenDeliveryMode | null;
  backchannel_client_notification_endpoint: string | null;
}): BackchannelSettings | null {
  if (!row.backchannel_token_delivery_mode) return null;
  return {
    tokenDeliveryMode: row.backchannel_token_delivery_mode,
    ...(row.backchannel_client_notification_endpoint ? { clientNotificationEndpoint: row.backchannel_client_notification_endpoint } : {}),
  };
}
