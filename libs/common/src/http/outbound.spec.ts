import dns from 'node:dns';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { REFUSING_PORT } from '@app/testing';
import { AddressClass, OutboundFailure, OutboundHttp, addressClassOf, outboundHostProblem, outboundLookup, outboundResult } from './outbound';

const STRICT = { allowLoopback: false, loopbackSetting: 'TEST_LOOPBACK' };
const LOOPBACK_ALLOWED = { allowLoopback: true, loopbackSetting: 'TEST_LOOPBACK' };

describe('addressClassOf', () => {
  const cases: [string, AddressClass | undefined][] = [
    // IPv4, every range, at both ends where it matters
    ['0.0.0.0', 'unspecified'],
    ['0.255.255.255', 'unspecified'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['100.64.0.1', 'carrier-grade-nat'],
    ['100.127.255.255', 'carrier-grade-nat'],
    ['100.128.0.1', 'public'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', 'public'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['192.88.99.1', 'reserved'],
    ['192.168.1.1', 'private'],
    ['198.18.0.1', 'reserved'],
    ['198.19.255.255', 'reserved'],
    ['198.51.100.7', 'reserved'],
    ['203.0.113.9', 'reserved'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.255', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['8.8.8.8', 'public'],
    ['1.1.1.1', 'public'],
    // IPv4 in the other spellings a URL parser accepts
    ['2130706433', 'loopback'],
    ['127.1', 'loopback'],
    ['0x7f000001', 'loopback'],
    ['0x7f.1', 'loopback'],
    ['0177.0.0.1', 'loopback'],
    ['0', 'unspecified'],
    ['167772161', 'private'],
    ['0xa9fea9fe', 'link-local'],
    // IPv6
    ['::', 'unspecified'],
    ['[::]', 'unspecified'],
    ['::1', 'loopback'],
    ['[0:0:0:0:0:0:0:1]', 'loopback'],
    ['fc00::1', 'private'],
    ['fdff:ffff::1', 'private'],
    ['fe80::1', 'link-local'],
    ['febf::1', 'link-local'],
    ['fec0::1', 'private'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['64:ff9b:1::1', 'private'],
    ['100::1', 'reserved'],
    ['4000::1', 'reserved'],
    ['2606:4700:4700::1111', 'public'],
    // IPv4-mapped, IPv4-compatible, NAT64 and 6to4 forms take the class of the IPv4 address inside
    ['[::ffff:7f00:1]', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['[::ffff:0:0]', 'unspecified'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:a9fe:a9fe', 'link-local'],
    ['::ffff:100.64.0.1', 'carrier-grade-nat'],
    ['::ffff:192.168.0.1', 'private'],
    ['::ffff:172.16.0.1', 'private'],
    ['::ffff:224.0.0.1', 'multicast'],
    ['::ffff:8.8.8.8', 'public'],
    ['[::127.0.0.1]', 'loopback'],
    ['::7f00:1', 'loopback'],
    ['::10.0.0.1', 'private'],
    ['::0.0.0.2', 'unspecified'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::169.254.169.254', 'link-local'],
    ['64:ff9b::8.8.8.8', 'public'],
    ['2002:7f00:1::1', 'loopback'],
    ['2002:c0a8:101::1', 'private'],
    ['2002:808:808::1', 'public'],
    // names are not literals: the connection decides (outboundLookup)
    ['localhost', undefined],
    ['example.com', undefined],
    ['127.0.0.1.nip.io', undefined],
  ];
  it.each(cases)('%s is %s', (host, expected) => {
    expect(addressClassOf(host)).toBe(expected);
  });
});

describe('outboundHostProblem', () => {
  it('refuses loopback in any spelling, naming the switch, and allows it only with the switch', () => {
    for (const host of ['127.0.0.1', '127.1', '2130706433', '0x7f000001', '[::1]', '[::ffff:7f00:1]', 'localhost', 'LOCALHOST.', 'a.localhost']) {
      expect([host, outboundHostProblem(host, STRICT)]).toEqual([host, expect.stringContaining('only TEST_LOOPBACK=true allows')]);
      expect([host, outboundHostProblem(host, LOOPBACK_ALLOWED)]).toEqual([host, undefined]);
    }
  });

  it('refuses private, link-local, shared and reserved addresses whatever the switch says', () => {
    for (const host of [
      '0.0.0.0',
      '[::]',
      '10.0.0.1',
      '169.254.169.254',
      '100.64.1.1',
      '192.168.1.1',
      '[fd00::1]',
      '[fe80::1]',
      '[::ffff:a00:1]',
      '224.0.0.1',
    ]) {
      for (const policy of [STRICT, LOOPBACK_ALLOWED]) {
        expect([host, outboundHostProblem(host, policy)]).toEqual([host, expect.stringContaining('private, link-local')]);
      }
    }
  });

  it('accepts public addresses and names (a name is decided when connecting)', () => {
    for (const host of ['8.8.8.8', '[2606:4700:4700::1111]', 'ns.servicebus.windows.net', 'localhost.example.com']) {
      expect([host, outboundHostProblem(host, STRICT)]).toEqual([host, undefined]);
    }
  });
});

describe('outboundResult', () => {
  it('names answers by status, a redirect as refused, and failures by their kind', () => {
    expect(outboundResult({ status: 204 })).toBe('http_204');
    expect(outboundResult({ status: 503 })).toBe('http_503');
    expect(outboundResult({ status: 307 })).toBe('redirect_refused');
    expect(outboundResult(new OutboundFailure('timeout'))).toBe('timeout');
  });
});

describe('outboundLookup', () => {
  const lookupOf = (policy: typeof STRICT, host: string, all: boolean) =>
    new Promise<unknown>((resolve, reject) => outboundLookup(policy)(host, { all }, (error, address) => (error ? reject(error) : resolve(address))));

  it('refuses a name that resolves to loopback unless allowed', async () => {
    await expect(lookupOf(STRICT, 'localhost', true)).rejects.toMatchObject({ kind: 'address_not_allowed' });
    await expect(lookupOf(STRICT, 'localhost', false)).rejects.toMatchObject({ kind: 'address_not_allowed' });
    const all = (await lookupOf(LOOPBACK_ALLOWED, 'localhost', true)) as { address: string }[];
    expect(all.length).toBeGreaterThan(0);
    expect(all.every((entry) => addressClassOf(entry.address) === 'loopback')).toBe(true);
    expect(addressClassOf((await lookupOf(LOOPBACK_ALLOWED, 'localhost', false)) as string)).toBe('loopback');
  });
});

describe('OutboundHttp', () => {
  let server: Server;
  let port: number;
  const received: string[] = [];
  beforeAll(async () => {
    server = createServer((request, response) => {
      received.push(request.url ?? '');
      if (request.url === '/redirect') response.writeHead(307, { Location: `http://127.0.0.1:${port}/target` }).end();
      else if (request.url === '/hang') setTimeout(() => response.writeHead(204).end(), 2000).unref();
      else response.writeHead(204).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => (received.length = 0));

  const post = (client: OutboundHttp, url: string, timeoutMs = 2000) => client.post(url, { headers: { 'Content-Type': 'text/plain' }, body: 'x', timeoutMs });

  it('refuses every spelling of loopback without connecting, and a name that resolves there at connect', async () => {
    const client = new OutboundHttp(STRICT);
    // A name of no special form that resolves to loopback (as a hostile DNS entry would).
    const real = dns.lookup;
    const lookup = jest
      .spyOn(dns, 'lookup')
      .mockImplementation(((host: string, options: object, callback: (...args: unknown[]) => void) =>
        host === 'hub.inside.test' ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : real(host, options, callback)) as unknown as typeof dns.lookup);
    try {
      for (const host of ['127.0.0.1', '2130706433', '127.1', '0x7f000001', '[::ffff:7f00:1]', '0.0.0.0', 'hub.inside.test', 'localhost']) {
        await expect(post(client, `http://${host}:${port}/x`)).rejects.toMatchObject({ kind: 'address_not_allowed' });
      }
      expect(received).toEqual([]);
      expect(lookup).toHaveBeenCalledWith('hub.inside.test', expect.anything(), expect.any(Function));
    } finally {
      lookup.mockRestore();
      client.close();
    }
  });

  it('with loopback allowed, calls it, and answers a redirect without following it', async () => {
    const client = new OutboundHttp(LOOPBACK_ALLOWED);
    try {
      expect((await post(client, `http://127.1:${port}/plain`)).status).toBe(204);
      const answer = await post(client, `http://localhost:${port}/redirect`);
      expect([answer.status, outboundResult(answer)]).toEqual([307, 'redirect_refused']);
      expect(received).toEqual(['/plain', '/redirect']);
    } finally {
      client.close();
    }
  });

  it('reports a timeout, a refused connection and a TLS failure by their class only', async () => {
    const client = new OutboundHttp(LOOPBACK_ALLOWED);
    try {
      await expect(post(client, `http://127.0.0.1:${port}/hang`, 200)).rejects.toMatchObject({ kind: 'timeout' });
      await expect(post(client, `http://127.0.0.1:${REFUSING_PORT}/`)).rejects.toMatchObject({
        kind: 'connection_failed',
        message: 'outbound call failed: connection_failed',
      });
      // https towards a plain http listener: the handshake fails.
      await expect(post(client, `https://127.0.0.1:${port}/`)).rejects.toMatchObject({ kind: 'tls_error' });
    } finally {
      client.close();
    }
  });
});
