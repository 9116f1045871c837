import { isLoopbackHost } from './loopback';

describe('isLoopbackHost', () => {
  it('is localhost, 127.0.0.0/8 and ::1 in any spelling', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', 'LOCALHOST', '[::1]', '::1', '[0:0:0:0:0:0:0:1]', '[::0001]']) {
      expect([host, isLoopbackHost(host)]).toEqual([host, true]);
    }
  });

  it('is nothing else: no other address, no name that a resolver could send elsewhere', () => {
    for (const host of ['10.0.0.1', '128.0.0.1', '0.0.0.0', 'example.com', 'localhost.example.com', 'a.localhost', '[::2]', '[::ffff:127.0.0.1]', '[::]']) {
      expect([host, isLoopbackHost(host)]).toEqual([host, false]);
    }
  });
});
