import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Actor, AuditLog, byActor } from '@app/audit';
import { OperatorDependentPolicy, Permission, RoleCatalog } from '@app/auth';
import { Clock, DomainError, Principal, invalidValue, notFound, parseBody, isUuid } from '@app/common';
import { DeviceService } from '@app/device';
import { Database } from '@app/persistence';
import { ContentRequestRepository, ContentRequestRow } from '../content-requests/content-request.repository';
import { CONTENT_REQUEST_SCHEMA } from '../content-requests/content-request.schema';
import { ContentRequestService } from '../content-requests/content-request.service';
import { DevicePolicyRepository } from '../device-policies/device-policy.repository';
import { EnrollmentDataRepository } from '../enrollment/enrollment-data.repository';
import { EnrollmentDataService } from '../enrollment/enrollment-data.service';
import { PolicyService } from '../policies/policy.service';
import { PrinterRepository } from '../printers/printer.repository';
import { SyncOutcome, SyncSessionService } from '../sync-sessions/sync-session.service';
import { SYNC_SESSION_SCHEMA } from '../sync-sessions/sync-session.schema';
import { WalletRepository } from '../wallets/wallet.repository';
import { DeviceFlowRepository, DeviceFlowRow, StoredResponse } from './device-flow.repository';
import { DeviceFlowStep, DeviceFlowType, continueDeviceFlowSchema, startDeviceFlowSchema } from './device-flow.schema';

/** The permission of each flow type (DECISIONS 5.2). */
const FLOW_PERMISSION: Readonly<Record<DeviceFlowType, Permission>> = {
  ASSISTED_ISSUANCE: Permission.DeviceFlowIssuance,
  REISSUANCE: Permission.DeviceFlowIssuance,
  APPLICATIONS_UPDATE: Permission.DeviceFlowApplicationsUpdate,
};

/** What to put on the card or the desk at a step (CREDENTIAL-MANAGEMENT.md "DeviceFlow": operations). */
export interface Operation {
  name: string;
  type: 'COLLECT' | 'PRINT' | 'ENCODE';
  payload: Record<string, unknown>;
  parameters: { id: string; value: string }[];
}

/** A flow with what its current step asks for, and, after ENCODE, the sync session's answer (its OATH secrets, once). */
export interface DeviceFlowView {
  row: DeviceFlowRow;
  request: ContentRequestRow;
  operations: Operation[];
  session?: SyncOutcome;
}

/**
 * DeviceFlow (CREDENTIAL-MANAGEMENT.md "DeviceFlow"): a guided issuance at a desk over the content
 * request it starts. ASSISTED_ISSUANCE and REISSUANCE walk COLLECT_DATA (responses become the
 * cardholder's enrollment data), PRINT (only with a printer; operations carry the card layout) and
 * ENCODE (operations say what goes on the card; responses are sync-session results and go through
 * SyncSessionService); APPLICATIONS_UPDATE is ENCODE only, over an update request. Each step is taken
 * under the flow's row lock; a response for another step than the current one is a 409.
 */
@Injectable()
export class DeviceFlowService {
  constructor(
    private readonly db: Database,
    private readonly flows: DeviceFlowRepository,
    private readonly requests: ContentRequestService,
    private readonly requestRows: ContentRequestRepository,
    private readonly sessions: SyncSessionService,
    private readonly enrollment: EnrollmentDataService,
    private readonly enrollmentRows: EnrollmentDataRepository,
    private readonly wallets: WalletRepository,
    private readonly devices: DeviceService,
    private readonly printers: PrinterRepository,
    private readonly devicePolicies: DevicePolicyRepository,
    private readonly policies: PolicyService,
    private readonly roles: RoleCatalog,
    private readonly operatorDependent: OperatorDependentPolicy,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
  ) {}

  async start(principal: Principal, body: unknown, actor: Actor): Promise<DeviceFlowView> {
    const input = parseBody(startDeviceFlowSchema, body, 'DeviceFlow');
    this.roles.assertAllows(principal.role, FLOW_PERMISSION[input.type]);
    const printer = input.printer ? await this.printers.find(principal.org, input.printer.value) : undefined;
    if (input.printer && !printer) throw invalidValue(`printer ${input.printer.value} does not exist in this organization.`);
    if (input.type === 'REISSUANCE') await this.revokeOldDevice(principal, input.wallet.value, input.oldDevice?.value, input.reason, actor);
    else if (input.oldDevice) throw invalidValue(`oldDevice is for a REISSUANCE flow, not ${input.type}.`);
    const steps: DeviceFlowStep[] = input.type === 'APPLICATIONS_UPDATE' ? ['ENCODE'] : ['COLLECT_DATA', ...(printer ? (['PRINT'] as const) : []), 'ENCODE'];
    const id = randomUUID();
    const request = await this.requests.create(
      principal,
      {
        schemas: [CONTENT_REQUEST_SCHEMA],
        type: input.type === 'APPLICATIONS_UPDATE' ? 'update' : 'issuance',
        target: { device: input.device, devicePolicy: input.devicePolicy },
        wallet: input.wallet,
        ...(input.reason ? { reason: input.reason } : {}),
      },
      actor,
      {},
      {
        authorized: true,
        // The flow commits with its request, or neither exists.
        within: async (created, tx) => {
          await this.flows.insert(
            {
              id,
              org_id: principal.org,
              type: input.type,
              status: 'IN_PROGRESS',
              steps,
              current_step: steps[0],
              wallet_id: input.wallet.value.toLowerCase(),
              device_id: input.device.value.toLowerCase(),
              old_device_id: input.oldDevice?.value.toLowerCase() ?? null,
              content_request_id: created.id,
              printer_id: printer?.id ?? null,
              started_by: principal.name,
              created_at: this.clock.now(),
            },
            tx,
          );
          await this.audit.record(
            {
              org: principal.org,
              ...byActor(actor),
              action: 'device_flow.start',
              target: id,
              outcome: 'success',
              details: { type: input.type, contentRequest: created.id, steps },
            },
            tx,
          );
        },
      },
    );
    return this.view(principal, (await this.flows.find(principal.org, id))!, request);
  }

  /** One step's responses (or a cancel); answers the flow with the next step's operations. */
  async continue(principal: Principal, id: string, body: unknown, actor: Actor): Promise<DeviceFlowView> {
    const input = parseBody(continueDeviceFlowSchema, body, 'DeviceFlow step');
    const flow = await this.reachableFlow(principal, id);
    this.roles.assertAllows(principal.role, FLOW_PERMISSION[flow.type]);
    if (flow.status !== 'IN_PROGRESS') throw new DomainError('CONFLICT', `DeviceFlow ${flow.id} is ${flow.status}; it takes no more steps.`);
    if ('cancel' in input) {
      await this.requests.act(principal, flow.content_request_id, 'cancel', {}, actor);
      return this.move(principal, flow, actor, { status: 'CANCELLED', currentStep: null, responses: [] }, 'device_flow.cancel');
    }
    if (input.step !== flow.current_step) {
      throw new DomainError(
        'CONFLICT',
        `DeviceFlow ${flow.id} is at step ${flow.current_step}; a response for ${input.step} is not expected (steps: ${flow.steps.join(', ')}).`,
      );
    }
    const next = flow.steps[flow.steps.indexOf(input.step) + 1] ?? null;
    if (input.step === 'ENCODE') {
      const request = (await this.requestRows.find(principal.org, flow.content_request_id))!;
      if (request.status === 'requested') {
        throw new DomainError(
          'CONFLICT',
          `DeviceFlow ${flow.id} cannot encode yet: approval is pending (content request ${request.id} is requested; another operator approves it).`,
        );
      }
      const session = await this.sessions.execute(
        principal,
        { schemas: [SYNC_SESSION_SCHEMA], contentRequest: { value: flow.content_request_id }, device: input.device, results: input.responses },
        actor,
      );
      const completed = session.request.status === 'completed';
      const responses = input.responses.map((r) => ({ step: 'ENCODE' as const, name: r.operation, output: r.detail ?? r.status }));
      const view = await this.move(principal, flow, actor, { status: completed ? 'COMPLETED' : 'FAILED', currentStep: null, responses }, 'device_flow.advance');
      return { ...view, session };
    }
    if (input.step === 'COLLECT_DATA' && input.responses.length > 0) {
      // The answers become the cardholder's enrollment data (the names given replace theirs; the others are kept).
      const wallet = (await this.wallets.find(principal.org, flow.wallet_id))!;
      const current = (await this.enrollmentRows.find(principal.org, wallet.owner_user_id))?.attributes ?? [];
      const given = new Map(input.responses.map((r) => [r.name, r.output]));
      const attributes = [...current.filter((a) => !given.has(a.name)), ...[...given].map(([name, value]) => ({ name, value }))];
      await this.enrollment.replace(principal, wallet.owner_user_id, { attributes }, actor);
    }
    // What was collected is enrollment data; the flow keeps the names, not the values (personal data).
    const responses = input.responses.map((r) => ({ step: input.step, name: r.name, output: input.step === 'COLLECT_DATA' ? '(enrollment data)' : r.output }));
    return this.move(principal, flow, actor, { status: 'IN_PROGRESS', currentStep: next, responses }, 'device_flow.advance');
  }

  private async move(
    principal: Principal,
    flow: DeviceFlowRow,
    actor: Actor,
    change: { status: DeviceFlowRow['status']; currentStep: DeviceFlowStep | null; responses: StoredResponse[] },
    action: 'device_flow.advance' | 'device_flow.cancel',
  ): Promise<DeviceFlowView> {
    await this.db.transaction(async (tx) => {
      const locked = await this.flows.find(principal.org, flow.id, tx, true);
      // Another step was taken meanwhile: this one's answer would be stale.
      if (!locked || locked.version !== flow.version)
        throw new DomainError('CONFLICT', `DeviceFlow ${flow.id} changed meanwhile; read it again and send the current step.`);
      await this.flows.advance(principal.org, flow.id, { ...change, now: this.clock.now() }, tx);
      await this.audit.record(
        {
          org: principal.org,
          ...byActor(actor),
          action,
          target: flow.id,
          outcome: 'success',
          details: { from: flow.current_step, to: change.currentStep, status: change.status, responses: change.responses.map((r) => r.name) },
        },
        tx,
      );
    });
    const row = (await this.flows.find(principal.org, flow.id))!;
    return this.view(principal, row, (await this.requestRows.find(principal.org, row.content_request_id))!);
  }

  /** REISSUANCE: the old card, which must be the wallet owner's, is revoked with the reason before the new one is requested. */
  private async revokeOldDevice(
    principal: Principal,
    walletId: string,
    oldDevice: string | undefined,
    reason: string | undefined,
    actor: Actor,
  ): Promise<void> {
    if (!oldDevice) throw invalidValue('A REISSUANCE flow needs oldDevice: {value: <device id>}, the card it replaces.');
    if (!reason) throw invalidValue('A REISSUANCE flow needs reason: why the old card is replaced (LOST, STOLEN, DAMAGED, RENEW, ...).');
    const wallet = await this.wallets.find(principal.org, walletId);
    const device = (await this.devices.get(principal, oldDevice).catch(() => undefined))?.row;
    if (!wallet || !device || device.owner_user_id !== wallet.owner_user_id) {
      throw invalidValue(`oldDevice ${oldDevice} is not a device of wallet ${walletId}.`);
    }
    if (device.status === 'REVOKED' || device.status === 'TERMINATED') return;
    await this.devices.act(principal, oldDevice, 'revoke', reason === 'NONE' ? undefined : (reason as never), actor);
  }

  private async reachableFlow(principal: Principal, id: string): Promise<DeviceFlowRow> {
    const flow = isUuid(id) ? await this.flows.find(principal.org, id) : undefined;
    const wallet = flow && (await this.wallets.find(principal.org, flow.wallet_id));
    if (!flow || !wallet || !this.operatorDependent.canReach(principal, { groups: wallet.owner_groups }))
      throw notFound(`DeviceFlow ${id.slice(0, 64)} does not exist.`);
    return flow;
  }

  /** The operations of the current step (none once the flow ended). */
  private async view(principal: Principal, row: DeviceFlowRow, request: ContentRequestRow): Promise<DeviceFlowView> {
    const parameters = request.parameters.map((p) => ({ id: p.id, value: p.value }));
    const operations: Operation[] = [];
    if (row.current_step === 'COLLECT_DATA') {
      operations.push({
        name: 'COLLECT_ENROLLMENT_DATA',
        type: 'COLLECT',
        payload: { suggested: ['employeeId', 'userPrincipalName', 'objectSid', 'photo'] },
        parameters,
      });
    } else if (row.current_step === 'PRINT') {
      const wallet = (await this.wallets.find(principal.org, row.wallet_id))!;
      const printer = row.printer_id ? await this.printers.find(principal.org, row.printer_id) : undefined;
      const photo = (await this.enrollmentRows.find(principal.org, wallet.owner_user_id))?.attributes.find((a) => a.name === 'photo')?.value;
      operations.push({
        name: 'PRINT_CARD',
        type: 'PRINT',
        payload: {
          printer: printer ? { value: printer.id, display: printer.name } : null,
          layout: { userName: wallet.owner_user_name, ...(photo ? { photo } : {}) },
        },
        parameters,
      });
    } else if (row.current_step === 'ENCODE') {
      const policy = request.device_policy_id ? await this.devicePolicies.find(principal.org, request.device_policy_id) : undefined;
      const { policy: credentialPolicy } = await this.policies.read(principal.org, 'credential');
      for (const credentialType of policy?.credential_types ?? []) {
        const payload =
          credentialType === 'PKI_CERTIFICATE'
            ? { credentialType, keyAlgorithms: credentialPolicy.keyAlgorithms, respondWith: 'csr' }
            : credentialType === 'OATH_TOTP' || credentialType === 'OATH_HOTP'
              ? { credentialType, digits: credentialPolicy.oathDigits, ...(credentialType === 'OATH_TOTP' ? { period: credentialPolicy.oathPeriod } : {}) }
              : { credentialType };
        operations.push({ name: `ENCODE_${credentialType}`, type: 'ENCODE', payload, parameters });
      }
    }
    return { row, request, operations };
  }
}
