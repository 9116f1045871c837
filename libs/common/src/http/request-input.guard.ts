import { CanActivate, ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { routeDeclaration } from '../decorators';
import { DomainError } from '../domain-error';
import { ORG_ID_PATTERN, UUID_PATTERN } from '../ids';

/** The formats a path parameter may be declared with (docs/decisions.md, "Bad input"). */
export const PARAMETER_FORMATS = {
  organizationId: { pattern: ORG_ID_PATTERN, description: 'an organization id, 1-64 characters of A-Z, a-z, 0-9 and _' },
  uuid: { pattern: UUID_PATTERN, description: 'a UUID such as 7d444840-9dc0-11d1-b245-5ffdce74fad2' },
  numericId: { pattern: /^[1-9][0-9]{0,17}$/, description: 'a number the service assigned, such as 12' },
  clientId: { pattern: /^[A-Za-z0-9_]{1,64}-[A-Za-z0-9]{1,64}$/, description: 'a Client ID, "{organization}-{suffix}"' },
  applicationId: { pattern: /^[A-Za-z0-9._-]{1,128}$/, description: 'an Application-ID, 1-128 characters of A-Z, a-z, 0-9, ".", "_" and "-"' },
  thumbprint: { pattern: /^[A-Za-z0-9_-]{43}$/, description: 'an x5t#S256 thumbprint, 43 base64url characters' },
  keyId: { pattern: /^[A-Za-z0-9_-]{43}$/, description: 'a key id (kid): the RFC 7638 thumbprint, 43 base64url characters' },
  ocspRequest: { pattern: /^[A-Za-z0-9+/=_-]{8,1000}$/, description: 'a DER OCSP request in base64 or base64url' },
  resourceTypeName: { pattern: /^[A-Za-z]{1,64}$/, description: 'a resource type name such as User' },
  globalPolicyId: { pattern: /^global$/, description: 'global (an organization has one policy of each kind)' },
  // Lenient on purpose: a mistyped link reaches the enrolment page, which says so (DECISIONS 14.4).
  enrolmentLink: { pattern: /^[A-Za-z0-9_-]{1,128}$/, description: "an enrolment link's secret, 43 base64url characters" },
  schemaUrn: { pattern: /^urn:[A-Za-z0-9:._-]{1,250}$/, description: 'a schema URN such as urn:ietf:params:scim:schemas:core:2.0:User' },
} as const;

export type ParameterFormat = keyof typeof PARAMETER_FORMATS;

/** The format of a path parameter by its name, unless its route declares another (`@PathFormats`). */
const FORMAT_BY_NAME: Record<string, ParameterFormat> = {
  org: 'organizationId',
  tenant: 'organizationId',
  clientId: 'clientId',
  applicationId: 'applicationId',
  secretId: 'uuid',
  thumbprint: 'thumbprint',
  kid: 'keyId',
};

export const PATH_FORMATS = 'pathFormats';

/** Declares the formats of a route's (or controller's) path parameters that differ by resource, such as `id`. */
export const PathFormats = (formats: Record<string, ParameterFormat>): MethodDecorator & ClassDecorator => SetMetadata(PATH_FORMATS, formats);

const pathFormatsOf = routeDeclaration<Record<string, ParameterFormat>>(PATH_FORMATS);

/** The declared format of every path parameter of a route; undefined for a parameter with none (a test fails on such a route). */
export function pathFormatOf(name: string, declared: Record<string, ParameterFormat> | undefined): ParameterFormat | undefined {
  return declared?.[name] ?? FORMAT_BY_NAME[name];
}

/** Longest query value accepted (a SCIM filter is the longest legitimate one). */
const MAX_QUERY_VALUE = 8192;

/**
 * Input that cannot be right never reaches a service (Issue 16): path parameters are checked
 * against their declared format (a value that cannot name anything is a 404 naming the parameter
 * and the format), and query values and JSON bodies must not carry a NUL character or a lone
 * UTF-16 surrogate, which PostgreSQL refuses or stores altered (400 naming where). Runs as a global
 * guard after the bearer check and before any access rule that reads the database.
 */
@Injectable()
export class RequestInputGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<{ params?: Record<string, string>; query?: Record<string, unknown>; body?: unknown }>();
    const declared = pathFormatsOf(context);
    for (const [name, value] of Object.entries(request.params ?? {})) {
      const format = pathFormatOf(name, declared);
      if (format === undefined) throw new Error(`Path parameter :${name} has no declared format; add it to @PathFormats or FORMAT_BY_NAME.`);
      if (!PARAMETER_FORMATS[format].pattern.test(value)) {
        throw new DomainError(
          'NOT_FOUND',
          `Nothing is named "${printable(value)}": the path parameter ${name} must be ${PARAMETER_FORMATS[format].description}.`,
        );
      }
    }
    for (const [name, value] of Object.entries(request.query ?? {})) {
      for (const item of Array.isArray(value) ? value : [value]) {
        if (typeof item !== 'string') continue;
        if (item.length > MAX_QUERY_VALUE)
          throw new DomainError('INVALID_VALUE', `Query parameter ${printable(name)} is longer than ${MAX_QUERY_VALUE} characters.`);
        const problem = unstorable(item);
        if (problem) throw new DomainError('INVALID_VALUE', `Query parameter ${printable(name)} contains ${problem}; remove it.`);
      }
    }
    const where = unstorableIn(request.body);
    if (where) throw new DomainError('INVALID_VALUE', `The request body's ${where.path || 'value'} contains ${where.problem}; remove it.`);
    return true;
  }
}

/** What in a string PostgreSQL cannot store as sent: a NUL character, or half of a surrogate pair. */
function unstorable(value: string): string | undefined {
  if (value.includes('\u0000')) return 'a NUL character (\\u0000)';
  if (!value.isWellFormed()) return 'a lone UTF-16 surrogate (half of a \\uD800-\\uDFFF pair)';
  return undefined;
}

/**
 * The first unstorable string in a parsed JSON body, keys included; iterative, so depth cannot
 * overflow the stack. A binary body (a Buffer: DER, PEM as bytes) holds no strings: walking it as an
 * object would visit every byte (Object.entries of a 1 MB body is a million entries).
 */
function unstorableIn(body: unknown): { path: string; problem: string } | undefined {
  if (body === null || body === undefined || ArrayBuffer.isView(body)) return undefined;
  const stack: { value: unknown; path: string }[] = [{ value: body, path: '' }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (typeof value === 'string') {
      const problem = unstorable(value);
      if (problem) return { path: path ? `attribute ${path}` : 'value', problem };
    } else if (Array.isArray(value)) {
      value.forEach((item, index) => stack.push({ value: item, path: `${path}[${index}]` }));
    } else if (typeof value === 'object' && value !== null) {
      for (const [key, item] of Object.entries(value)) {
        const keyProblem = unstorable(key);
        if (keyProblem) return { path: `attribute name ${printable(key)}`, problem: keyProblem };
        stack.push({ value: item, path: path ? `${path}.${key}` : key });
      }
    }
  }
  return undefined;
}

/** A value quoted in an error: short, and without the characters that made it wrong. */
function printable(value: string): string {
  // eslint-disable-next-line no-control-regex -- the control characters are what this replaces
  const shown = value.slice(0, 64).replace(/[\u0000-\u001f\u007f]/g, '?');
  return (shown.isWellFormed() ? shown : shown.toWellFormed()) + (value.length > 64 ? '...' : '');
}
