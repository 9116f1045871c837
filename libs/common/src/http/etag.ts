import { CallHandler, ExecutionContext, Injectable, NestInterceptor, createParamDecorator } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { Observable, map } from 'rxjs';
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
 * Sets `ETag: W/"<version>"` on every answer that is one versioned resource, so that no route writes
 * the header by hand. Registered once for the whole application (apps/api/src/app.setup.ts).
 */
@Injectable()
export class ResourceETagInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      map((body: unknown) => {
        const version = versionOf(body);
        if (version !== undefined) {
          const reply = context.switchToHttp().getResponse<FastifyReply>();
          if (!reply.hasHeader('ETag')) reply.header('ETag', weakETag(version));
        }
        return body;
      }),
    );
  }
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
