import { createHmac } from 'node:crypto';
import { isLoopbackHost } from '@app/common';
import { ConnectionStringParts } from '../gateways/connection-string';
import { GatewayType, MessageTemplate, MessageTemplates } from '../gateways/push-gateway.schema';
import type { NotificationTemplate } from '../notifications/push-notifications';

/**
 * The notification hub's REST send (DECISIONS 10.2): `POST {scheme}://{namespace}/{hub}/messages/?api-version=2015-01&direct`
 * with a SharedAccessSignature, the platform format, the device handle and a body rendered from the
 * gateway's template. Pure functions: the sender (PushSender) does the I/O.
 */

/** How long a signature is valid: long enough for one send and its clock skew, short enough to be useless when leaked. */
export const SIGNATURE_LIFETIME_S = 300;

/** The hub's `ServiceBusNotification-Format` of each gateway type. */
export const HUB_FORMATS: Record<GatewayType, 'windows' | 'gcm' | 'apple'> = {
  CLOUD_WNS_PUSH: 'windows',
  CLOUD_GCM_PUSH: 'gcm',
  CLOUD_APNS_PUSH: 'apple',
};

/** What a notification says when its gateway has no template of that kind (DECISIONS 10.2). */
export const DEFAULT_TEMPLATES: Record<NotificationTemplate, MessageTemplate> = {
  credential: { title: 'Credential update', msg: '{{message}}' },
  challenge: { title: 'Sign-in request', msg: 'Approve the sign-in: {{bindingMessage}}' },
};

/** The hub's resource URI (what the signature covers) and the URL of its direct send. */
export function hubUrls(endpoint: Pick<ConnectionStringParts, 'host' | 'hostname'>, hub: string): { resource: string; send: string } {
  // Plain http only towards the machine itself (a test hub or a local relay); everything else is https.
  const scheme = isLoopbackHost(endpoint.hostname) ? 'http' : 'https';
  const path = hub
    .split('/')
    .filter((segment) => segment !== '')
    .map(encodeURIComponent)
    .join('/');
  const resource = `${scheme}://${endpoint.host}/${path}`;
  return { resource, send: `${resource}/messages/?api-version=2015-01&direct` };
}

/**
 * The `Authorization` value for `resource` (Azure Service Bus SAS): `sr` is the resource URI
 * lower-cased and URL-encoded (then lower-cased again, as the service compares it), `sig` the
 * URL-encoded base64 HMAC-SHA256, keyed with the SharedAccessKey's text, of `sr + "\n" + se`, `se`
 * the expiry in seconds since the epoch, `skn` the key's name.
 */
export function sharedAccessSignature(resource: string, keyName: string, key: string, expiresAtS: number): string {
  const sr = encodeURIComponent(resource.toLowerCase()).toLowerCase();
  const sig = createHmac('sha256', key).update(`${sr}\n${expiresAtS}`, 'utf8').digest('base64');
  return `SharedAccessSignature sr=${sr}&sig=${encodeURIComponent(sig)}&se=${expiresAtS}&skn=${encodeURIComponent(keyName)}`;
}

/** `{{name}}` becomes the notification's value of that name; a placeholder with no value stays as written. */
export function renderTemplate(text: string, values: Record<string, string>): string {
  return text.replace(/\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g, (placeholder, name: string) =>
    Object.prototype.hasOwnProperty.call(values, name) ? values[name] : placeholder,
  );
}

function escapeXml(text: string): string {
  return text.replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c]!);
}

export interface HubMessageInput {
  /** The outbox row's id: the idempotency key, also in the payload so the app can drop a repeat. */
  id: string;
  template: NotificationTemplate;
  values: Record<string, string>;
  pushHandle: string;
}

export interface HubGateway {
  type: GatewayType;
  notificationTtlS: number;
  messageTemplates: MessageTemplates;
}

export interface HubMessage {
  headers: Record<string, string>;
  body: string;
}

/**
 * Headers (less Authorization) and body of one send. The time to live goes where each platform
 * reads it: FCM's `time_to_live` in the body, APNs' expiry header (a W3C date), WNS's X-WNS-TTL.
 */
export function hubMessage(gateway: HubGateway, notification: HubMessageInput, now: Date): HubMessage {
  const template = gateway.messageTemplates[notification.template] ?? DEFAULT_TEMPLATES[notification.template];
  const title = renderTemplate(template.title ?? DEFAULT_TEMPLATES[notification.template].title!, notification.values);
  const msg = renderTemplate(template.msg, notification.values);
  const format = HUB_FORMATS[gateway.type];
  const ttl = gateway.notificationTtlS;
  const headers: Record<string, string> = {
    'ServiceBusNotification-Format': format,
    'ServiceBusNotification-DeviceHandle': notification.pushHandle,
    'Idempotency-Key': notification.id,
  };
  // What the app reads besides the text: which notification (to drop a repeat) and its values.
  const data = { ...notification.values, notificationId: notification.id, template: notification.template };
  switch (format) {
    case 'gcm':
      headers['Content-Type'] = 'application/json;charset=utf-8';
      return { headers, body: JSON.stringify({ notification: { title, body: msg }, data, time_to_live: ttl }) };
    case 'apple':
      headers['Content-Type'] = 'application/json;charset=utf-8';
      headers['ServiceBusNotification-Apns-Expiry'] = new Date(now.getTime() + ttl * 1000).toISOString();
      return { headers, body: JSON.stringify({ aps: { alert: { title, body: msg } }, data }) };
    case 'windows':
      headers['Content-Type'] = 'application/xml;charset=utf-8';
      headers['X-WNS-Type'] = 'wns/toast';
      headers['X-WNS-TTL'] = String(ttl);
      return {
        headers,
        body:
          `<toast launch="${escapeXml(JSON.stringify(data))}"><visual><binding template="ToastGeneric">` +
          `<text>${escapeXml(title)}</text><text>${escapeXml(msg)}</text></binding></visual></toast>`,
      };
  }
}
