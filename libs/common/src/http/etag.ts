import { ExecutionContext, createParamDecorator } from '@nestjs/common';
import { DomainError, invalidValue } from '../domain-error';

/**
 * Versions and entity tags of every versioned resource (RFC 7644 3.14; DECISIONS 10 for gateways,
 * CREDENTIAL-MANAGEMENT.md: "meta.version is the ETag and If-Match works on every update"): a
 * resource's `meta.version` is a string counting from "1", its ETag is the weak tag `W/"<version>"`,
 * and `If-Match` is compared weakly, by version.
 */

/** The weak entity tag of a version. */
export const weakETag = (version: number | string): string => `W/"${version}"`;

/**
 * Where a projected resource (attributes=/excludedAttributes=, which may drop `meta`) keeps its
 * version, so that its answer still carries the ETag. Not enumerable: never serialised.
 */
export const RESOURCE_VERSION = Symbol('resourceVersion');

/** Carries `version` on `target` without serialising it (see RESOURCE_VERSION). */
export function keepVersion<T extends object>(target: T, version: unknown): T {
  if (version !== undefined) Object.defineProperty(target, RESOURCE_VERSION, { value: version, enumerable: false });
  return target;
}

/** The version a handler's answer declares: its `meta.version`, or the one a projection kept. */
export function versionOf(body: unknown): string | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const kept = (body as Record<symbol, unknown>)[RESOURCE_VERSION];
  if (kept !== undefined) return String(kept);
  const meta = (body as { meta?: { version?: unknown } }).meta;
  return typeof meta?.version === 'string' || typeof meta?.version === 'number' ? String(meta.version) : undefined;
}

/**
 * An answer already serialised to JSON, with the version its ETag names (issue 35): what a read
 * served from a change-feed cache returns, so that the resource is presented and serialised once
 * per version of the cached object instead of on every request. resourceAnswer (below) sets the ETag from `version` and sends `json` as the body, in the
 * Content-Type the route's media-type rules chose (application/json when none did).
 */
export class SerializedAnswer {
  constructor(
    readonly json: string,
    readonly version: string | undefined,
  ) {}
}

/** At most this many variants (API versions and the like) are kept per cached object. */
const MAX_VARIANTS = 8;

const answers = new WeakMap<object, Map<string, SerializedAnswer>>();

/**
 * `present()` serialised once for the cached object `source` and `variant` (everything else the
 * presentation depends on: an API version, a row version), then the same answer for as long as the
 * cache hands out that object. `source` must be a value the cache replaces rather than changes in
 * place (FeedCache evicts and reads anew); its answers go with it to the garbage collector. The
 * caller puts into `variant` whatever else shapes the answer; a projected answer
 * (attributes=/excludedAttributes=) is built per request instead.
 */
export function serializedOnce(source: object, variant: string, present: () => unknown): SerializedAnswer {
  let variants = answers.get(source);
  if (variants === undefined) answers.set(source, (variants = new Map()));
  let answer = variants.get(variant);
  if (answer === undefined) {
    const body = present();
    answer = new SerializedAnswer(JSON.stringify(body), versionOf(body));
    if (variants.size < MAX_VARIANTS) variants.set(variant, answer);
  }
  return answer;
}

/** The part of a reply resourceAnswer uses. */
export interface ReplyHeaders {
  hasHeader(name: string): boolean;
  header(name: string, value: string): unknown;
}

/**
 * What a route's answer becomes on the wire, for every route of the application (the HTTP adapter
 * calls it for each answer a handler returns: apps/api/src/app.setup.ts): `ETag: W/"<version>"` on an
 * answer that is one versioned resource, so that no route writes the header by hand, and an answer
 * serialised once per version (SerializedAnswer) sent as its JSON text, which Fastify sends as it is.
 * A plain function rather than a Nest interceptor: with no interceptor, Nest runs a route without
 * building an rxjs pipeline per request (issue 35; docs/performance.md).
 */
export function resourceAnswer(reply: ReplyHeaders, body: unknown): unknown {
  const serialized = body instanceof SerializedAnswer;
  const version = serialized ? body.version : versionOf(body);
  if (version !== undefined && !reply.hasHeader('ETag')) reply.header('ETag', weakETag(version));
  if (!serialized) return body;
  if (!reply.hasHeader('Content-Type')) reply.header('Content-Type', 'application/json; charset=utf-8');
  return body.json;
}

/**
 * A parsed `If-Match` header (RFC 9110 13.1.1), compared weakly as RFC 7644 3.14 does: `W/"3"` and
 * `"3"` both match version 3, `*` matches any current version. Absent: no precondition.
 */
export class IfMatch {
  private constructor(
    readonly any: boolean,
    private readonly tags: string[],
  ) {}

  static parse(header: string | string[] | undefined): IfMatch | undefined {
    if (header === undefined) return undefined;
    const text = (Array.isArray(header) ? header.join(',') : header).trim();
    if (text === '*') return new IfMatch(true, []);
    const tags: string[] = [];
    for (const part of text.split(',')) {
      const match = /^\s*(?:W\/)?"([\x21\x23-\x7e]*)"\s*$/.exec(part);
      if (!match) {
        throw invalidValue('The header If-Match must be "*" or a list of entity tags such as W/"3" (the ETag of the version you read).');
      }
      tags.push(match[1]);
    }
    return new IfMatch(false, tags);
  }

  matches(version: number): boolean {
    return this.any || this.tags.includes(String(version));
  }

  /** A specific version was asked for: a concurrent change must fail rather than be retried over. */
  get pinsVersion(): boolean {
    return !this.any;
  }

  /** Throws 412 unless `version` matches (`what` names the resource in the detail). */
  assertMatches(what: string, version: number): void {
    if (!this.matches(version)) throw preconditionFailed(what, version);
  }
}

/** The request's `If-Match`, parsed (400 when malformed), or undefined when absent. */
export const IfMatchHeader = createParamDecorator((_: unknown, context: ExecutionContext): IfMatch | undefined =>
  IfMatch.parse(context.switchToHttp().getRequest<{ headers: Record<string, string | string[] | undefined> }>().headers['if-match']),
);

export function preconditionFailed(what: string, version: number): DomainError {
  return new DomainError(
    'PRECONDITION_FAILED',
    `${what} has changed: its current version is ${version} (ETag W/"${version}"), not the one in If-Match. Read it again and retry.`,
  );
}
