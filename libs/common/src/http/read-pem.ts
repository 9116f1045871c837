import { DomainError } from '../domain-error';
import { parseBody, z } from '../validation';

const pemObject = z.object({ pem: z.string({ message: 'must be the certificate in PEM form, as a string' }) }).strict();

/** A certificate upload body (DECISIONS 11): PEM as application/x-pem-file or text/plain, or JSON {pem}. */
export function readPem(body: unknown): string {
  if (typeof body === 'string') return body;
  if (Buffer.isBuffer(body)) return body.toString('utf8');
  if (body && typeof body === 'object' && !Array.isArray(body)) return parseBody(pemObject, body).pem;
  throw new DomainError('INVALID_SYNTAX', 'Send the certificate as PEM (Content-Type application/x-pem-file or text/plain) or as JSON {"pem": "..."}.');
}
