import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';

/** Where the portal lives (DECISIONS 17): every path under it is the portal's. */
export const PORTAL_PATH = '/portal/';

/** The placeholder in portal/index.html that each answer replaces with its own CSP nonce. */
const NONCE_PLACEHOLDER = '__CSP_NONCE__';
/** The placeholder replaced with the organization of the browser's session ('' without one). */
const SESSION_ORG_PLACEHOLDER = '__SESSION_ORG__';

/** A portal page names its organization first: /portal/{org}/... */
const ORG_PAGE = /^([A-Za-z0-9_]{1,64})(?:\/|$)/;

/** What the portal's pages need to know of the browser's session: its organization, or null without a live one. */
export type SessionOrganization = (request: FastifyRequest) => Promise<string | null>;

/** Vite writes content-hashed file names under assets/ (`index-B3x9kQ.js`): they never change. */
const HASHED_ASSETS = 'assets/';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};
const COMPRESSIBLE = new Set(['.html', '.js', '.css', '.svg', '.json', '.txt']);

interface PortalFile {
  body: Buffer;
  gzip?: Buffer;
  type: string;
  cacheControl: string;
}

/**
 * The portal's Content-Security-Policy (DECISIONS 17): scripts only from files of this origin (no
 * inline script), styles from files and from the `<style>` tags Mantine injects, which carry this
 * answer's nonce; API calls only to this origin; no plugins, no <base>, never framed.
 */
export function portalCsp(nonce: string): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    `style-src 'self' 'nonce-${nonce}'`,
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "manifest-src 'self'",
    "form-action 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** Every file of the build, read once at start-up (a few hundred kB), compressed ahead of time. */
function readBuild(dir: string): Map<string, PortalFile> {
  const files = new Map<string, PortalFile>();
  const walk = (folder: string) => {
    for (const name of readdirSync(folder)) {
      const path = join(folder, name);
      if (statSync(path).isDirectory()) {
        walk(path);
        continue;
      }
      const key = relative(dir, path).split(sep).join('/');
      const extension = extname(name).toLowerCase();
      const body = readFileSync(path);
      files.set(key, {
        body,
        gzip: COMPRESSIBLE.has(extension) && body.length > 1024 ? gzipSync(body, { level: 9 }) : undefined,
        type: TYPES[extension] ?? 'application/octet-stream',
        // Files outside assets/ (the favicon) keep their name across builds: revalidated each time.
        cacheControl: key.startsWith(HASHED_ASSETS) ? 'public, max-age=31536000, immutable' : 'no-cache',
      });
    }
  };
  walk(dir);
  return files;
}

/** Headers of every portal answer, the 404s included. */
function securityHeaders(reply: FastifyReply, nonce: string): FastifyReply {
  return reply
    .header('Content-Security-Policy', portalCsp(nonce))
    .header('Referrer-Policy', 'no-referrer')
    .header('Cross-Origin-Opener-Policy', 'same-origin')
    .header('Cross-Origin-Resource-Policy', 'same-origin')
    .header('X-Content-Type-Options', 'nosniff');
}

function acceptsGzip(request: FastifyRequest): boolean {
  const accepted = request.headers['accept-encoding'];
  return typeof accepted === 'string' && /\bgzip\b/i.test(accepted);
}

/**
 * Serves the management portal's build at /portal/ (DECISIONS 17). A path with a file extension is
 * a file of the build or a 404; any other path is one of the portal's own pages, answered with
 * index.html so that a deep link reloads (the portal's router then shows the page, or its own
 * not-found page). index.html is never cached, since it names the current build's assets, and
 * carries a fresh CSP nonce each time; the hashed assets are cached for a year.
 */
export function registerPortal(
  fastify: FastifyInstance,
  {
    portalDir,
    sessionOrganization,
    loginLocation,
  }: { portalDir: string; sessionOrganization: SessionOrganization; loginLocation: (org: string, returnTo: string) => string },
  logger: Logger,
): void {
  const built = existsSync(join(portalDir, 'index.html'));
  if (!built) logger.warn({ portalDir }, 'the management portal is not built: /portal/ answers 503 (npm start builds it)');
  const files = built ? readBuild(portalDir) : new Map<string, PortalFile>();
  const index = files.get('index.html')?.body.toString('utf8');

  fastify.get('/portal', (request, reply) => {
    const query = request.url.indexOf('?');
    void reply.redirect(`${PORTAL_PATH}${query >= 0 ? request.url.slice(query) : ''}`, 308);
  });

  fastify.get('/portal/*', async (request, reply) => {
    const nonce = randomBytes(16).toString('base64');
    securityHeaders(reply, nonce);
    const path = (request.params as { '*': string })['*'];
    const lastSegment = path.slice(path.lastIndexOf('/') + 1);
    if (lastSegment.includes('.') && path !== 'index.html') {
      const file = files.get(path);
      if (!file)
        return reply.code(404).header('Cache-Control', 'no-store').type('text/plain; charset=utf-8').send(`No file ${PORTAL_PATH}${path} in the portal.\n`);
      reply.header('Content-Type', file.type).header('Cache-Control', file.cacheControl);
      if (!file.gzip) return reply.send(file.body);
      reply.header('Vary', 'Accept-Encoding');
      return acceptsGzip(request) ? reply.header('Content-Encoding', 'gzip').send(file.gzip) : reply.send(file.body);
    }
    reply.header('Cache-Control', 'no-store');
    if (index === undefined) {
      return reply
        .code(503)
        .type('text/plain; charset=utf-8')
        .send('The management portal is not built. `npm start` builds it; to build it alone: npm --prefix portal run build\n');
    }
    // An organization's page without a live session goes to that organization's login page at
    // once, to come back here: the portal never starts only to be refused. The page tells the
    // portal which organization the session is in, so that another organization's URL shows the
    // not-found page without a refused call (DECISIONS 17).
    const org = ORG_PAGE.exec(path)?.[1];
    const sessionOrg = (await sessionOrganization(request)) ?? '';
    if (org !== undefined && sessionOrg === '') return reply.redirect(loginLocation(org, request.url), 303);
    return reply.type('text/html; charset=utf-8').send(index.replaceAll(NONCE_PLACEHOLDER, nonce).replaceAll(SESSION_ORG_PLACEHOLDER, sessionOrg));
  });
}
