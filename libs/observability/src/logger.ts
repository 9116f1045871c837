import { LoggerService } from '@nestjs/common';
import pino, { Logger } from 'pino';

/**
 * Field names whose values must never reach a log line. pino's redaction replaces them wherever
 * they appear in logged objects, as a second line of defence behind "never log a secret".
 */
const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  '*.client_secret',
  '*.client_assertion',
  '*.assertion',
  '*.password',
  '*.secret',
  '*.value',
  '*.pin',
  '*.connectionString',
  '*.SharedAccessKey',
  '*.pem',
  // A smart card's administration key in a SyncSession answer (DECISIONS 17.1).
  '*.adminKey',
  // The hosted login page, people's sessions and CIBA (DECISIONS 14, 16).
  '*.auth_req_id',
  '*.authReqId',
  '*.client_notification_token',
  '*.clientNotificationToken',
  '*.step_token',
  '*.form_token',
  '*.cookieValue',
];

export interface Loggers {
  /** Everything but the access log; redacts secret-looking fields wherever they appear. */
  logger: Logger;
  /**
   * One line per request, with a fixed set of fields that never hold user input beyond the route
   * pattern (request id, method, route, status, duration): no redaction pass, which cost about 8%
   * of a request's CPU in the probe benchmark.
   */
  accessLogger: Logger;
}

let lastMs = -1;
let lastTime = '';

/**
 * pino's `isoTime` timestamp (`,"time":"<ISO 8601>"`), formatted once per millisecond: under load
 * many log lines (the access log's above all) fall in one millisecond, and each formatting of a
 * Date cost about 1% of a cached read's CPU (issue 35).
 */
export function isoTimeOncePerMillisecond(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    lastTime = `,"time":"${new Date(now).toISOString()}"`;
  }
  return lastTime;
}

/**
 * The lines logged in one turn of the event loop, handed to the destination as one write when the
 * turn ends (or once 64 KiB are held). Under load a turn answers many requests, and a write per
 * access-log line, handed to libuv's thread pool, cost each of them several microseconds (issue 35,
 * docs/performance.md). A line waits at most for the end of its turn, so the log still reads as it
 * happens (a buffer flushed by a timer each second did not: DECISIONS 13.3), and the lines of every
 * logger keep their order.
 */
export class LinesOfATurn implements pino.DestinationStream {
  private held = '';
  private scheduled = false;

  constructor(private readonly destination: pino.DestinationStream) {}

  write(line: string): void {
    this.held += line;
    if (this.held.length >= MAX_HELD) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  readonly flush = (): void => {
    this.scheduled = false;
    if (this.held === '') return;
    const lines = this.held;
    this.held = '';
    this.destination.write(lines);
  };
}

const MAX_HELD = 64 * 1024;

/**
 * The service's log: standard output, written synchronously (pino's default) one turn's lines at a
 * time; what the last turn holds is written when the process exits, however it exits.
 */
export function serviceLog(): LinesOfATurn {
  const lines = new LinesOfATurn(pino.destination({ sync: true }));
  process.once('exit', lines.flush);
  return lines;
}

/** `destination`: where the lines go as they are logged (a test's collector); by default the service's log. */
export function createLoggers(level: string, destination: pino.DestinationStream = serviceLog()): Loggers {
  const options = { level, base: { service: 'credential-platform' }, timestamp: isoTimeOncePerMillisecond };
  return {
    logger: pino({ ...options, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, destination),
    accessLogger: pino(options, destination),
  };
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return createLoggers(level, destination).logger;
}

/** Nest's start-up contexts whose messages are logged at debug level: one line per module and per route. */
const START_UP_DETAIL = new Set(['InstanceLoader', 'RoutesResolver', 'RouterExplorer']);

/** Lets Nest's own messages (module init, route map) go through the same JSON logger. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}

  log(message: unknown, context?: string): void {
    // The route map (some 440 lines) and module initialisation are for whoever debugs the start, not for every start's log.
    if (context !== undefined && START_UP_DETAIL.has(context)) this.logger.debug({ context }, String(message));
    else this.logger.info({ context }, String(message));
  }
  error(message: unknown, trace?: string, context?: string): void {
    this.logger.error({ context, trace }, String(message));
  }
  warn(message: unknown, context?: string): void {
    this.logger.warn({ context }, String(message));
  }
  debug(message: unknown, context?: string): void {
    this.logger.debug({ context }, String(message));
  }
  verbose(message: unknown, context?: string): void {
    this.logger.trace({ context }, String(message));
  }
}

/** Injection token for the process's pino logger. */
export const LOGGER = Symbol('LOGGER');
export type { Logger };
