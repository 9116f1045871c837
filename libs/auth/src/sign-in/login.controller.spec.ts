import type { FastifyReply, FastifyRequest } from 'fastify';
import { notFound } from '@app/common';
import type { OrganizationService } from '@app/accounts';
import type { AppConfig } from '@app/config';
import { DatabaseUnavailableError } from '@app/persistence';
import type { SignInSessionService } from '../sessions/sign-in-session.service';
import { LoginController } from './login.controller';
import type { LoginFormProtection } from './login-form-protection';
import type { LoginService } from './login.service';
import type { PasskeyCeremonies } from './passkeys/passkey-ceremonies';
import type { EnrolmentService } from './enrolment/enrolment.service';
import type { FactorStepPages } from './enrolment/factor-step-pages';

/** A reply that records its status. */
function recordingReply() {
  const sent: { status?: number; body?: unknown } = {};
  const reply = {
    code(status: number) {
      sent.status = status;
      return reply;
    },
    header() {
      return reply;
    },
    send(body: unknown) {
      sent.body = body;
      return reply;
    },
  };
  return { reply: reply as unknown as FastifyReply, sent };
}

function controllerWith(get: () => Promise<never>): LoginController {
  return new LoginController(
    {} as LoginService,
    {} as SignInSessionService,
    {} as LoginFormProtection,
    { get } as unknown as OrganizationService,
    {} as PasskeyCeremonies,
    {} as EnrolmentService,
    {} as FactorStepPages,
    { clientCertificateFromProxy: false, trustedProxies: [] } as unknown as AppConfig,
  );
}

describe('LoginController: the organization of the page', () => {
  it('an unknown organization is the 404 page', async () => {
    const { reply, sent } = recordingReply();
    await controllerWith(() => Promise.reject(notFound('Organization "nope" does not exist.'))).form('nope', {}, {} as FastifyRequest, reply);
    expect(sent.status).toBe(404);
    expect(String(sent.body)).toContain('There is no organization');
  });

  it('a database outage is not called an unknown organization: the error goes on to the error answer (503)', async () => {
    const { reply } = recordingReply();
    const outage = new DatabaseUnavailableError('connection refused');
    await expect(controllerWith(() => Promise.reject(outage)).form('acme', {}, {} as FastifyRequest, reply)).rejects.toBe(outage);
  });
});
