import { Server, Socket, createConnection, createServer } from 'node:net';

/**
 * A loopback TCP proxy in front of a server (the test's PostgreSQL), which a chaos test cuts and
 * restores: `cut()` resets every open connection and refuses new ones, as a database that went
 * away; `restore()` forwards again.
 */
export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  private open = true;
  private server!: Server;
  port = 0;

  private constructor() {}

  static async start(targetHost: string, targetPort: number): Promise<TcpProxy> {
    const proxy = new TcpProxy();
    const server = createServer((client) => {
      if (!proxy.open) {
        client.resetAndDestroy();
        return;
      }
      const upstream = createConnection(targetPort, targetHost);
      for (const socket of [client, upstream]) {
        proxy.sockets.add(socket);
        socket.on('close', () => proxy.sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    proxy.server = server;
    proxy.port = (server.address() as { port: number }).port;
    return proxy;
  }

  cut(): void {
    this.open = false;
    for (const socket of this.sockets) socket.resetAndDestroy();
  }

  restore(): void {
    this.open = true;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
