import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { accessRuleOf, DomainError, Principal, PRINCIPAL_KEY, forbidden, routeFamilyOfRequest, RoutedRequest } from '@app/common';
import { CertifiedApplicationService } from '@app/accounts';

const APPLICATION_ID = /^[A-Za-z0-9._-]{1,128}$/;
const APPLICATION_VERSION = /^\d{1,9}\.\d{1,9}(\.\d{1,9})?$/;

/**
 * The request headers every API call carries (interface, Authentication 5; DECISIONS 6):
 * `Application-ID` and `Application-Version`, and, under an organization's `certified` policy, an
 * Application-ID registered through the admin API. Runs after the bearer guard, which knows the
 * caller's organization.
 */
@Injectable()
export class ApplicationHeadersGuard implements CanActivate {
  constructor(private readonly applications: CertifiedApplicationService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const rule = accessRuleOf(context);
    const request = context.switchToHttp().getRequest<RoutedRequest & { headers: Record<string, string | string[] | undefined> } & Record<string, unknown>>();
    // DECISIONS 6: the token service family (everything under /authentication/) does not need the headers.
    if (rule?.kind === 'public' || !routeFamilyOfRequest(request).applicationHeaders) return true;
    const applicationId = readHeader(
      request.headers,
      'Application-ID',
      APPLICATION_ID,
      'the identifier of your application: 1-128 characters of A-Z, a-z, 0-9, ".", "_" and "-"',
    );
    readHeader(
      request.headers,
      'Application-Version',
      APPLICATION_VERSION,
      "your application's version as two or three dot-separated numbers, e.g. 2.2 or 1.4.2",
    );
    const principal = request[PRINCIPAL_KEY] as Principal | undefined;
    if (principal?.applicationIdPolicy === 'certified' && !(await this.applications.isCertified(principal.org, applicationId))) {
      throw forbidden(
        `Application-ID "${applicationId}" is not certified for organization "${principal.org}"; an administrator registers certified Application-IDs at /admin/v1/organizations/${principal.org}/applications.`,
      );
    }
    return true;
  }
}

function readHeader(headers: Record<string, string | string[] | undefined>, name: string, pattern: RegExp, expected: string): string {
  const value = headers[name.toLowerCase()];
  if (value === undefined) throw new DomainError('INVALID_VALUE', `The header ${name} is required: ${expected}.`);
  if (Array.isArray(value)) throw new DomainError('INVALID_VALUE', `The header ${name} is given more than once.`);
  if (value.trim() === '') throw new DomainError('INVALID_VALUE', `The header ${name} is empty: ${expected}.`);
  if (!pattern.test(value)) throw new DomainError('INVALID_VALUE', `The header ${name} "${value.slice(0, 64)}" is malformed: ${expected}.`);
  return value;
}
