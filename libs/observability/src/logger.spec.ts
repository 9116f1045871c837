import { Writable } from 'node:stream';
import { LinesOfATurn, PinoNestLogger, createLogger, createLoggers } from './logger';

/** What one log call writes, parsed. */
function logged(write: (logger: ReturnType<typeof createLogger>) => void): Record<string, unknown> {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  write(createLogger('info', destination as never));
  return JSON.parse(lines[0]) as Record<string, unknown>;
}

describe('logger redaction', () => {
  it('redacts the secrets of sign-in, CIBA, push delivery and card admin keys wherever an object carries them one level down', () => {
    const secrets = {
      auth_req_id: 'AUTH-REQ-ID',
      authReqId: 'AUTH-REQ-ID',
      client_notification_token: 'NOTIFY-TOKEN',
      clientNotificationToken: 'NOTIFY-TOKEN',
      step_token: 'STEP-TOKEN',
      form_token: 'FORM-TOKEN',
      cookieValue: 'COOKIE',
      SharedAccessKey: 'SAS-KEY',
      adminKey: '0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF',
    };
    const line = JSON.stringify(logged((logger) => logger.warn({ details: secrets }, 'something failed')));
    for (const value of new Set(Object.values(secrets))) expect(line).not.toContain(value);
    expect(line).toContain('[redacted]');
  });
});

describe("Nest's start-up messages", () => {
  it('logs the route map and module initialisation at debug level, and the rest of Nest at info (issue 33 item 3)', () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    const nest = (level: string) => new PinoNestLogger(createLogger(level, destination as never));
    nest('info').log('Mapped {/health/live, GET} route', 'RouterExplorer');
    nest('info').log('HealthController {/health}:', 'RoutesResolver');
    nest('info').log('AppModule dependencies initialized', 'InstanceLoader');
    expect(lines).toEqual([]);
    nest('info').log('Nest application successfully started', 'NestApplication');
    nest('debug').log('Mapped {/health/live, GET} route', 'RouterExplorer');
    expect(lines.map((line) => JSON.parse(line) as { level: number; msg: string })).toEqual([
      expect.objectContaining({ level: 30, msg: 'Nest application successfully started' }),
      expect.objectContaining({ level: 20, msg: 'Mapped {/health/live, GET} route' }),
    ]);
  });
});

describe('LinesOfATurn', () => {
  const collector = () => {
    const writes: string[] = [];
    return { writes, destination: { write: (chunk: string) => void writes.push(chunk) } };
  };
  const turnEnds = () => new Promise((resolve) => setImmediate(resolve));

  it('writes the lines of one turn of the event loop as one write, in their order, once the turn is over (issue 35)', async () => {
    const { writes, destination } = collector();
    const lines = new LinesOfATurn(destination);
    const { logger, accessLogger } = createLoggers('info', lines);
    accessLogger.info({ reqId: 1 }, 'request');
    logger.warn('between two requests');
    accessLogger.info({ reqId: 2 }, 'request');
    expect(writes).toEqual([]);
    await turnEnds();
    expect(writes).toHaveLength(1);
    const logged = writes[0]
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { msg: string; reqId?: number });
    expect(logged.map(({ msg, reqId }) => [msg, reqId])).toEqual([
      ['request', 1],
      ['between two requests', undefined],
      ['request', 2],
    ]);
    accessLogger.info({ reqId: 3 }, 'request');
    await turnEnds();
    expect(writes).toHaveLength(2);
    expect(JSON.parse(writes[1])).toMatchObject({ msg: 'request', reqId: 3 });
    await turnEnds();
    expect(writes).toHaveLength(2);
  });

  it('writes at once when a turn holds 64 KiB, and holds nothing back', async () => {
    const { writes, destination } = collector();
    const lines = new LinesOfATurn(destination);
    const line = `${'x'.repeat(1023)}\n`;
    for (let i = 0; i < 64; i++) lines.write(line);
    expect(writes).toEqual([line.repeat(64)]);
    lines.write('last\n');
    await turnEnds();
    expect(writes).toEqual([line.repeat(64), 'last\n']);
  });
});
