import { DomainError, parseBody } from '@app/common';
import { PUSH_GATEWAY_SCHEMA, createGatewaySchema, refuseLaterAttributes, replaceGatewaySchema } from './push-gateway.schema';

const CONNECTION = 'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Full;SharedAccessKey=c2VjcmV0a2V5;';
const valid = { schemas: [PUSH_GATEWAY_SCHEMA], type: 'CLOUD_GCM_PUSH', name: 'Android push' };

function refusal(schema: typeof createGatewaySchema | typeof replaceGatewaySchema, body: unknown): string {
  try {
    parseBody(schema, body);
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    return (error as DomainError).detail;
  }
  throw new Error('accepted');
}

describe('push gateway request bodies', () => {
  it('a create needs schemas, type and name, and reads the time to live as seconds', () => {
    expect(parseBody(createGatewaySchema, { ...valid, connectionString: CONNECTION, notificationTimeToLive: '3600' })).toEqual({
      ...valid,
      connectionString: CONNECTION,
      notificationTimeToLive: 3600,
    });
    expect(refusal(createGatewaySchema, { type: 'CLOUD_GCM_PUSH', name: 'x' })).toContain(`schemas: is required and must hold "${PUSH_GATEWAY_SCHEMA}"`);
    expect(refusal(createGatewaySchema, { ...valid, type: undefined })).toContain('type: is required, one of CLOUD_WNS_PUSH, CLOUD_GCM_PUSH, CLOUD_APNS_PUSH');
    expect(refusal(createGatewaySchema, { ...valid, name: undefined })).toContain('name: is required');
  });

  it('names the field and the allowed values', () => {
    expect(refusal(createGatewaySchema, { ...valid, type: 'CLOUD_FOO_PUSH' })).toContain(
      'type: "CLOUD_FOO_PUSH" is not a gateway type; allowed: CLOUD_WNS_PUSH, CLOUD_GCM_PUSH, CLOUD_APNS_PUSH',
    );
    expect(refusal(createGatewaySchema, { ...valid, supportedOperatingSystems: ['Android', 'Linux'] })).toContain(
      'supportedOperatingSystems.1: "Linux" is not a supported operating system; allowed: WINDOWS, WINDOWS10, WINDOWS11, Android, iOS12, iOS13',
    );
    expect(refusal(createGatewaySchema, { ...valid, supportedOperatingSystems: ['Android', 'Android'] })).toContain(
      'supportedOperatingSystems: lists an operating system twice',
    );
    expect(refusal(createGatewaySchema, { ...valid, notificationTimeToLive: 3600 })).toContain(
      'notificationTimeToLive: must be a string holding a whole number of seconds',
    );
    expect(refusal(createGatewaySchema, { ...valid, notificationTimeToLive: '-1' })).toContain('notificationTimeToLive: must be a string holding');
    expect(refusal(createGatewaySchema, { ...valid, notificationTimeToLive: '2419201' })).toContain('from 0 to 2419200');
    expect(refusal(createGatewaySchema, { ...valid, connectionString: 'nonsense' })).toContain('connectionString: part 1 is not a Key=Value pair');
    expect(refusal(createGatewaySchema, { ...valid, messageTemplates: { credential: { title: 't' } } })).toContain(
      'messageTemplates.credential.msg: is required',
    );
    expect(refusal(createGatewaySchema, { ...valid, messageTemplates: { credential: { msg: 'x'.repeat(2049) } } })).toContain(
      'messageTemplates.credential.msg: must be the message text, 1-2048 characters',
    );
    expect(refusal(createGatewaySchema, { ...valid, messageTemplates: { other: { msg: 'x' } } })).toContain('"other" is not part of this resource');
    expect(refusal(createGatewaySchema, { ...valid, name: ' ' })).toContain('name: must be a name of 1-128 characters');
    expect(refusal(createGatewaySchema, { ...valid, colour: 'blue' })).toContain('"colour" is not part of this resource');
    expect(refusal(createGatewaySchema, { ...valid, schemas: ['urn:other'] })).toContain(`schemas: must hold "${PUSH_GATEWAY_SCHEMA}"`);
  });

  it('a replace needs only schemas; type is left to the service; name cannot be cleared', () => {
    expect(parseBody(replaceGatewaySchema, { schemas: [PUSH_GATEWAY_SCHEMA], hub: null })).toEqual({ schemas: [PUSH_GATEWAY_SCHEMA], hub: null });
    expect(parseBody(replaceGatewaySchema, { schemas: [PUSH_GATEWAY_SCHEMA], type: 'X', id: '3', meta: {} })).toEqual({
      schemas: [PUSH_GATEWAY_SCHEMA],
      type: 'X',
    });
    expect(refusal(replaceGatewaySchema, { schemas: [PUSH_GATEWAY_SCHEMA], name: null })).toContain('name: cannot be cleared');
  });

  it('refuses attributes of a later api-version, naming them and the version to use', () => {
    expect(() => refuseLaterAttributes({ name: 'x', notes: 'n' }, 3)).not.toThrow();
    expect(() => refuseLaterAttributes({ appId: 'a' }, 1)).toThrow(
      'Attribute "appId" (api-version=2) is not part of api-version=1; send the request with ?api-version=2',
    );
    expect(() => refuseLaterAttributes({ appId: 'a', notes: 'n' }, 2)).toThrow(
      'Attribute "notes" (api-version=3) is not part of api-version=2; send the request with ?api-version=3',
    );
    expect(() => refuseLaterAttributes({ appId: 'a', messageTemplates: {} }, 1)).toThrow(
      'Attributes "appId" (api-version=2), "messageTemplates" (api-version=3) are not part of api-version=1; send the request with ?api-version=3',
    );
  });
});
