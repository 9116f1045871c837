import { Writable } from 'node:stream';
import { PinoNestLogger, createLogger } from './logger';

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
