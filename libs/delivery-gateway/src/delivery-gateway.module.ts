import { Module } from '@nestjs/common';
import { AccountDependents, AccountsModule } from '@app/accounts';
import { ApprovalDevices, AuthModule } from '@app/auth';
import { AppConfig } from '@app/config';
import { DataCipher } from '@app/common';
import { ConnectionStringResealer } from './gateways/connection-string.resealer';
import { PushGatewayController } from './gateways/push-gateway.controller';
import { PushGatewayPresenter } from './gateways/push-gateway.presenter';
import { PushGatewayRepository } from './gateways/push-gateway.repository';
import { PushGatewayService } from './gateways/push-gateway.service';
import { AuthenticatorPolicyController } from './policies/authenticator-policy.controller';
import { AuthenticatorPolicyPresenter } from './policies/authenticator-policy.presenter';
import { AuthenticatorPolicyRepository } from './policies/authenticator-policy.repository';
import { AuthenticatorPolicyService } from './policies/authenticator-policy.service';
import { AuthenticatorRemoval } from './authenticators/authenticator-removal';
import { AuthenticatorPresenter } from './authenticators/authenticator.presenter';
import { AuthenticatorRepository } from './authenticators/authenticator.repository';
import { AuthenticatorService } from './authenticators/authenticator.service';
import { SelfAuthenticatorsController, UserAuthenticatorsController } from './authenticators/authenticators.controller';
import { BackchannelApprovalService } from './approvals/backchannel-approval.service';
import { BackchannelApprovalsController } from './approvals/backchannel-approvals.controller';
import { PushDeliveryController } from './delivery/push-delivery.controller';
import { PushDeliveryPresenter } from './delivery/push-delivery.presenter';
import { PushDeliveryService } from './delivery/push-delivery.service';
import { PushSender } from './delivery/push-sender';
import { PushTestService } from './delivery/push-test.service';
import { OutboxPushNotifications } from './notifications/outbox-push-notifications';
import { PushNotifications } from './notifications/push-notifications';
import { PushOutboxRepository } from './notifications/push-outbox.repository';
import { OutboxSignal } from './notifications/outbox-signal';

/**
 * What delivery-gateway keeps about users, without HTTP or the token service: the service and the
 * command line both load it, so that disabling a person removes their authenticators in the same
 * transaction, whichever of the two disables them (docs/decisions.md "Table ownership"). It also
 * provides the PushNotifications port (the outbox, DECISIONS 10.1), so that a change made by either
 * writes its notifications in its own transaction; the sender runs only in the service.
 */
@Module({
  imports: [AccountsModule],
  providers: [
    AuthenticatorRepository,
    AuthenticatorRemoval,
    PushOutboxRepository,
    OutboxSignal,
    { provide: PushNotifications, useClass: OutboxPushNotifications },
  ],
  exports: [AuthenticatorRepository, PushOutboxRepository, OutboxSignal, PushNotifications],
})
export class DeliveryGatewayStoreModule {
  constructor(dependents: AccountDependents, removal: AuthenticatorRemoval) {
    removal.register(dependents);
  }
}

/**
 * Push delivery gateways and the authenticator policies that bind them (interface, "Push delivery
 * gateways"; DECISIONS 10), under `/configuration/{tenant}/v2`, where `{tenant}` must be the
 * caller's organization (else 403). Reads need `referenceData.read`; create, replace and delete
 * also `oobAdapterConfiguration.manage`.
 *
 * DeliveryGateway/Push: see PushGatewayController and push-gateway.schema.ts. Decisions where the
 * interface and DECISIONS are silent: `type` and `name` are required on create, everything else
 * optional (a gateway, like the defaults, may be configured later); `notificationTimeToLive`
 * defaults to "86400" and is at most "2419200" (28 days, the longest the push services keep a
 * message); names are unique per tenant ignoring case; on replace, `null` clears an optional
 * attribute (time to live: back to the default) and `messageTemplates.credential` / `.challenge`
 * are each kept when left out; templates: `msg` 1-2048 characters, `title` 1-256. The three
 * defaults ("Default WNS gateway", "Default GCM gateway", "Default APNS gateway") come with the
 * operating systems of their type. The list is never paged (a tenant has a handful of gateways).
 * Connection strings are sealed per row (DataCipher); at start, values sealed with an older key of
 * DATA_ENCRYPTION_KEYS are sealed again with the first (ConnectionStringResealer), so a key can be
 * retired after one restart with `new,old`.
 *
 * Policy/Authenticator (`urn:vendor:scim:api:idp:2.0:Policy:Authenticator`, resourceType
 * `Authenticator Policy`):
 *
 *   { "schemas": ["urn:vendor:scim:api:idp:2.0:Policy:Authenticator"],
 *     "id": "7",                                  numeric string, assigned by the service
 *     "name": "Mobile sign-in",                   required on create, 1-128 characters, unique per tenant (409 uniqueness)
 *     "description": "...",                       optional, at most 1000 characters
 *     "deliveryGateways": [                       priority order, at most 20, each gateway once;
 *       {"value": "12", "display": "Android push"}  value: a gateway id of the tenant (else 400 naming it);
 *     ],                                            display: read-only, the gateway's current name
 *     "meta": { "resourceType", "created", "lastModified", "location", "version" } }
 *
 * GET all answers the SCIM ListResponse (`Resources`, `startIndex`, `count`); GET one, POST (201,
 * `Location`), PUT and DELETE (204) work as for gateways: `ETag: W/"<version>"`, `If-Match`
 * (412 when stale), PUT keeps left-out attributes and replaces `deliveryGateways` when sent. A
 * gateway still listed by a policy cannot be deleted (409 naming the policy), which a foreign key
 * enforces.
 *
 * Authenticators (CREDENTIAL-MANAGEMENT.md "Authenticators"): a person's mobile authenticator apps,
 * the devices the gateways deliver to, under `/Self/Authenticators` and `/Users/{uid}/Authenticators`
 * of the credential-management API. This library owns them because the sender joins each one with
 * the gateway of its operating system; other libraries ask through AuthenticatorService.
 */
@Module({
  imports: [DeliveryGatewayStoreModule, AccountsModule, AuthModule],
  controllers: [
    PushGatewayController,
    AuthenticatorPolicyController,
    SelfAuthenticatorsController,
    UserAuthenticatorsController,
    PushDeliveryController,
    BackchannelApprovalsController,
  ],
  providers: [
    BackchannelApprovalService,
    AuthenticatorService,
    { provide: AuthenticatorPresenter, inject: [AppConfig], useFactory: (config: AppConfig) => new AuthenticatorPresenter(config.publicBaseUrl) },
    PushGatewayRepository,
    PushGatewayService,
    AuthenticatorPolicyRepository,
    AuthenticatorPolicyService,
    ConnectionStringResealer,
    PushSender,
    PushTestService,
    PushDeliveryService,
    { provide: PushDeliveryPresenter, inject: [AppConfig], useFactory: (config: AppConfig) => new PushDeliveryPresenter(config.publicBaseUrl) },
    { provide: DataCipher, inject: [AppConfig], useFactory: (config: AppConfig) => new DataCipher(config.dataEncryptionKeys) },
    { provide: PushGatewayPresenter, inject: [AppConfig], useFactory: (config: AppConfig) => new PushGatewayPresenter(config.publicBaseUrl) },
    { provide: AuthenticatorPolicyPresenter, inject: [AppConfig], useFactory: (config: AppConfig) => new AuthenticatorPolicyPresenter(config.publicBaseUrl) },
  ],
  exports: [PushGatewayService, AuthenticatorPolicyService, AuthenticatorService],
})
export class DeliveryGatewayModule {
  constructor(devices: ApprovalDevices, approvals: BackchannelApprovalService) {
    // The token service asks a person's authenticator apps to approve CIBA requests (DECISIONS 16).
    approvals.register(devices);
  }
}
