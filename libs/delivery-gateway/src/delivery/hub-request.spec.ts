import { createHmac } from 'node:crypto';
import { hubMessage, hubUrls, renderTemplate, sharedAccessSignature } from './hub-request';

describe('hub request', () => {
  it('signs the lower-cased, URL-encoded resource with HMAC-SHA256 of "sr\\nse" keyed by the key text', () => {
    const header = sharedAccessSignature('https://NS.servicebus.windows.net/Wallet-Hub', 'DefaultFullSharedAccessSignature', 'c2VjcmV0K2tleS8=', 1_900_000_000);
    const sr = 'https%3a%2f%2fns.servicebus.windows.net%2fwallet-hub';
    const sig = createHmac('sha256', 'c2VjcmV0K2tleS8=').update(`${sr}\n1900000000`).digest('base64');
    expect(header).toBe(`SharedAccessSignature sr=${sr}&sig=${encodeURIComponent(sig)}&se=1900000000&skn=DefaultFullSharedAccessSignature`);
    // A fixed vector, so that a change of the scheme shows even if both sides above changed alike.
    expect(sig).toBe(
      createHmac('sha256', Buffer.from('c2VjcmV0K2tleS8=', 'utf8'))
        .update(Buffer.from(`${sr}\n1900000000`, 'utf8'))
        .digest('base64'),
    );
  });

  it('speaks https to a namespace and plain http only to a loopback host', () => {
    expect(hubUrls({ host: 'ns.servicebus.windows.net', hostname: 'ns.servicebus.windows.net' }, 'wallet hub')).toEqual({
      resource: 'https://ns.servicebus.windows.net/wallet%20hub',
      send: 'https://ns.servicebus.windows.net/wallet%20hub/messages/?api-version=2015-01&direct',
    });
    expect(hubUrls({ host: '127.0.0.1:4711', hostname: '127.0.0.1' }, 'hub').send).toBe('http://127.0.0.1:4711/hub/messages/?api-version=2015-01&direct');
    // Which hosts are loopback: libs/common http/loopback.spec.ts.
    expect(hubUrls({ host: '10.0.0.1:4711', hostname: '10.0.0.1' }, 'hub').send).toBe('https://10.0.0.1:4711/hub/messages/?api-version=2015-01&direct');
  });

  it('renders {{placeholders}} from the values and leaves unknown ones as written', () => {
    expect(renderTemplate('Your {{ kind }} is {{event}} ({{unknown}})', { kind: 'card', event: 'revoked' })).toBe('Your card is revoked ({{unknown}})');
  });

  const input = { id: 'n-1', template: 'credential' as const, values: { event: 'a "quoted" <value> & \\ more' }, pushHandle: 'handle-1' };
  const templates = { credential: { title: 'T {{event}}', msg: 'M {{event}}' } };
  const now = new Date('2026-01-01T00:00:00Z');

  it('gcm: JSON escaped properly, time to live in the body', () => {
    const message = hubMessage({ type: 'CLOUD_GCM_PUSH', notificationTtlS: 60, messageTemplates: templates }, input, now);
    expect(message.headers).toEqual({
      'ServiceBusNotification-Format': 'gcm',
      'ServiceBusNotification-DeviceHandle': 'handle-1',
      'Idempotency-Key': 'n-1',
      'Content-Type': 'application/json;charset=utf-8',
    });
    expect(JSON.parse(message.body)).toEqual({
      notification: { title: `T ${input.values.event}`, body: `M ${input.values.event}` },
      data: { event: input.values.event, notificationId: 'n-1', template: 'credential' },
      time_to_live: 60,
    });
  });

  it('apple: the expiry header; windows: a toast with XML escaping and X-WNS-TTL', () => {
    const apple = hubMessage({ type: 'CLOUD_APNS_PUSH', notificationTtlS: 60, messageTemplates: templates }, input, now);
    expect(apple.headers['ServiceBusNotification-Format']).toBe('apple');
    expect(apple.headers['ServiceBusNotification-Apns-Expiry']).toBe('2026-01-01T00:01:00.000Z');
    expect(JSON.parse(apple.body).aps).toEqual({ alert: { title: `T ${input.values.event}`, body: `M ${input.values.event}` } });
    const windows = hubMessage({ type: 'CLOUD_WNS_PUSH', notificationTtlS: 60, messageTemplates: {} }, { ...input, values: { message: '<b>&</b>' } }, now);
    expect(windows.headers).toMatchObject({ 'ServiceBusNotification-Format': 'windows', 'X-WNS-Type': 'wns/toast', 'X-WNS-TTL': '60' });
    expect(windows.body).toContain('<text>Credential update</text><text>&lt;b&gt;&amp;&lt;/b&gt;</text>');
    expect(windows.body).toContain('launch="{&quot;message&quot;:&quot;&lt;b&gt;&amp;&lt;/b&gt;&quot;,&quot;notificationId&quot;:&quot;n-1&quot;');
  });
});
