import { Injectable } from '@nestjs/common';
import type { Transaction } from '@app/persistence';

/** What a person is asked to approve, as their authenticator apps are told it. */
export interface ApprovalAsk {
  org: string;
  userId: string;
  /** The request's id as the app sees it (never the client's auth_req_id). */
  requestId: string;
  clientId: string;
  bindingMessage: string | null;
  expiresAt: Date;
}

/** Asks the person's devices in `tx`; answers how many devices were asked (0: the person has none that can be reached). */
export type ApprovalDeviceSource = (ask: ApprovalAsk, tx: Transaction) => Promise<number>;

/**
 * The devices a person approves a CIBA request on (DECISIONS 16), supplied by the library that
 * keeps them (delivery-gateway: the person's authenticator apps, asked through the push outbox), so
 * that the token service asks them without knowing their tables and without importing that library.
 * The ask is written in the transaction of the request, so a request exists exactly when its push does.
 */
@Injectable()
export class ApprovalDevices {
  private source?: ApprovalDeviceSource;

  register(source: ApprovalDeviceSource): void {
    if (this.source) throw new Error('ApprovalDevices: a source is already registered; one library supplies the devices people approve on.');
    this.source = source;
  }

  /** Whether a library supplies devices (without one, no CIBA request can be accepted). */
  get available(): boolean {
    return this.source !== undefined;
  }

  ask(ask: ApprovalAsk, tx: Transaction): Promise<number> {
    if (!this.source) return Promise.resolve(0);
    return this.source(ask, tx);
  }
}
