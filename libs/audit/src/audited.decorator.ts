import { SetMetadata } from '@nestjs/common';
import { AuditAction } from './audit-catalogue';

export const AUDIT_DECLARATION = 'auditDeclaration';

/** What a route declares about the audit log; test/audit-declarations walks every route for it. */
export type AuditDeclaration = { kind: 'audited'; actions: AuditAction[] } | { kind: 'not-audited'; reason: string };

/**
 * The events a state-changing route writes (through AuditLog, in the transaction of the change).
 * Every POST, PUT, PATCH and DELETE route declares this or `@NotAudited(reason)`; a route without
 * either fails the suite.
 */
export const Audited = (...actions: [AuditAction, ...AuditAction[]]): MethodDecorator & ClassDecorator =>
  SetMetadata(AUDIT_DECLARATION, { kind: 'audited', actions } satisfies AuditDeclaration);

/** A POST that changes nothing (a search, an introspection): the reason is part of the route table. */
export const NotAudited = (reason: string): MethodDecorator & ClassDecorator =>
  SetMetadata(AUDIT_DECLARATION, { kind: 'not-audited', reason } satisfies AuditDeclaration);
