import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';

/**
 * The service's log as a process writes it (libs/observability `serviceLog`): the lines of a turn
 * of the event loop go out together when the turn ends (issue 35), and none is lost when the
 * process exits, however it exits. Runs the built logger in a child process, as the service does.
 */
const LOGGER = join(resolve(__dirname, '..'), 'dist/libs/observability/src/logger.js');

function run(body: string): { status: number | null; lines: string[] } {
  const script = `const { createLoggers } = require(${JSON.stringify(LOGGER)});
const { logger, accessLogger } = createLoggers('info');
${body}`;
  const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 });
  return { status: child.status, lines: child.stdout.split('\n').filter((line) => line !== '') };
}

/** What each line says: the JSON lines' msg and reqId, anything else as written. */
function said(lines: string[]): string[] {
  return lines.map((line) => {
    if (!line.startsWith('{')) return line;
    const { msg, reqId } = JSON.parse(line) as { msg: string; reqId?: number };
    return reqId === undefined ? msg : `${msg} ${reqId}`;
  });
}

describe('the service log', () => {
  it('writes the lines of a turn before anything a later turn writes', () => {
    const { status, lines } = run(`
accessLogger.info({ reqId: 1 }, 'request');
logger.info('started');
accessLogger.info({ reqId: 2 }, 'request');
setTimeout(() => { require('node:fs').writeSync(1, 'a later turn\\n'); accessLogger.info({ reqId: 3 }, 'request'); }, 10);`);
    expect(status).toBe(0);
    expect(said(lines)).toEqual(['request 1', 'started', 'request 2', 'a later turn', 'request 3']);
  });

  it('writes what the last turn held when the process exits in that turn', () => {
    const { status, lines } = run(`
accessLogger.info({ reqId: 1 }, 'request');
logger.error('giving up');
process.exit(3);`);
    expect(status).toBe(3);
    expect(said(lines)).toEqual(['request 1', 'giving up']);
  });

  it('writes what the last turn held when an uncaught error ends the process', () => {
    const { status, lines } = run(`
accessLogger.info({ reqId: 1 }, 'request');
throw new Error('unexpected');`);
    expect(status).toBe(1);
    expect(said(lines)).toEqual(['request 1']);
  });
});
