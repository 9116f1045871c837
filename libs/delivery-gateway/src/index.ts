export * from './delivery-gateway.module';
export { PushGatewayService } from './gateways/push-gateway.service';
export type { WrittenGateway } from './gateways/push-gateway.service';
export { AuthenticatorPolicyService } from './policies/authenticator-policy.service';
export { GATEWAY_TYPES, OPERATING_SYSTEMS, PUSH_GATEWAY_SCHEMA, PUSH_GATEWAY_RESOURCE_TYPE } from './gateways/push-gateway.schema';
export { AUTHENTICATOR_POLICY_SCHEMA, AUTHENTICATOR_POLICY_RESOURCE_TYPE } from './policies/authenticator-policy.schema';
export { AuthenticatorService } from './authenticators/authenticator.service';
export type { Holder } from './authenticators/authenticator.service';
export { AUTHENTICATOR_SCHEMA, AUTHENTICATOR_RESOURCE_TYPE } from './authenticators/authenticator.schema';
