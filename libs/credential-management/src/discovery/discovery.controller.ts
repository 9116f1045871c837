import { Controller, Get, Injectable, Param } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AppConfig } from '@app/config';
import { SCIM_CORE_USER_SCHEMA, USER_SEARCH_DEFINITION } from '@app/accounts';
import { DEVICE_MULTI_VALUED, DEVICE_SCHEMA, DEVICE_SEARCH_DEFINITION } from '@app/device';
import {
  ApiSchemaResponse,
  AuthorizedBy,
  scimListSchema,
  CANONICAL_PREFIX,
  PathFormats,
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  ScimMediaTypes,
  credentialManagementPaths,
  notFound,
} from '@app/common';
import { DEVICE_POLICY_SCHEMA, DEVICE_POLICY_SEARCH_DEFINITION } from '../device-policies/device-policy.schema';
import { GROUP_SEARCH_DEFINITION, SCIM_CORE_GROUP_SCHEMA } from '../groups/group.schema';
import { PRINTER_SCHEMA, PRINTER_SEARCH_DEFINITION } from '../printers/printer.schema';
import { ENTERPRISE_USER_SCHEMA, USER_PERMISSION_SCHEMA } from '../users/user.schema';
import { ResourceSchema, schemaRepresentation } from './schema-representation';

const SCHEMA_URN = {
  serviceProviderConfig: 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig',
  resourceType: 'urn:ietf:params:scim:schemas:core:2.0:ResourceType',
  schema: 'urn:ietf:params:scim:schemas:core:2.0:Schema',
  list: 'urn:ietf:params:scim:api:messages:2.0:ListResponse',
};

/** The resources this API serves, as RFC 7643 section 6 describes them. */
const RESOURCES: { name: string; endpoint: string; description: string; schema: ResourceSchema; extensions: string[] }[] = [
  {
    name: 'User',
    endpoint: '/Users',
    description: 'Cardholders and operators of the organization',
    schema: {
      id: SCIM_CORE_USER_SCHEMA,
      name: 'User',
      definition: USER_SEARCH_DEFINITION,
      required: ['userName'],
      readOnly: ['id', 'groups', 'wallet', 'x509Certificates', 'meta'],
      unique: ['userName'],
      multiValued: ['emails', 'phoneNumbers', 'addresses', 'groups', 'roles', 'x509Certificates'],
    },
    extensions: [ENTERPRISE_USER_SCHEMA, USER_PERMISSION_SCHEMA],
  },
  {
    name: 'Device',
    endpoint: '/Device',
    description: 'Smart cards and security modules (ATR and CUID)',
    schema: {
      id: DEVICE_SCHEMA,
      name: 'Device',
      definition: DEVICE_SEARCH_DEFINITION,
      required: ['externalIds'],
      readOnly: ['id', 'status', 'owner', 'issuanceDate', 'policy', 'credentials', 'meta'],
      unique: [],
      multiValued: DEVICE_MULTI_VALUED,
    },
    extensions: [],
  },
  {
    name: 'Group',
    endpoint: '/Groups',
    description: 'Sets of users (written through the admin API)',
    schema: {
      id: SCIM_CORE_GROUP_SCHEMA,
      name: 'Group',
      definition: GROUP_SEARCH_DEFINITION,
      required: ['displayName'],
      readOnly: ['id', 'members', 'meta'],
      unique: ['displayName'],
      multiValued: ['members'],
    },
    extensions: [],
  },
  {
    name: 'DevicePolicy',
    endpoint: '/DevicePolicy',
    description: 'What goes on a device for which groups of users (written through the admin API)',
    schema: {
      id: DEVICE_POLICY_SCHEMA,
      name: 'DevicePolicy',
      definition: DEVICE_POLICY_SEARCH_DEFINITION,
      required: ['name'],
      readOnly: ['id', 'meta'],
      unique: ['name'],
      multiValued: ['deviceTypes', 'credentialTypes', 'groups'],
    },
    extensions: [],
  },
  {
    name: 'Printer',
    endpoint: '/Printer',
    description: 'Card printers (written through the admin API)',
    schema: {
      id: PRINTER_SCHEMA,
      name: 'Printer',
      definition: PRINTER_SEARCH_DEFINITION,
      required: ['name'],
      readOnly: ['id', 'meta'],
      unique: ['name'],
      multiValued: [],
    },
    extensions: [],
  },
];

/** The discovery documents of RFC 7644 section 4, built from the resources' own definitions. */
@Injectable()
export class DiscoveryDocuments {
  constructor(private readonly config: AppConfig) {}

  serviceProviderConfig() {
    return {
      schemas: [SCHEMA_URN.serviceProviderConfig],
      documentationUri: `${this.config.publicBaseUrl}/api-docs`,
      patch: { supported: true },
      bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
      filter: { supported: true, maxResults: MAX_PAGE_SIZE },
      changePassword: { supported: true },
      sort: { supported: true },
      etag: { supported: true },
      pagination: { index: true, cursor: false, defaultPageSize: DEFAULT_PAGE_SIZE, maxPageSize: MAX_PAGE_SIZE },
      authenticationSchemes: [
        {
          type: 'oauthbearertoken',
          name: 'OAuth Bearer Token',
          description: 'An access token from the organization token endpoint (client credentials, jwt-bearer or password grant).',
          specUri: 'https://www.rfc-editor.org/info/rfc6750',
          primary: true,
        },
      ],
      meta: { resourceType: 'ServiceProviderConfig', location: this.location('/ServiceProviderConfig') },
    };
  }

  resourceTypes() {
    return list(RESOURCES.map((resource) => this.resourceType(resource)));
  }

  resourceType(resource: (typeof RESOURCES)[number]) {
    return {
      schemas: [SCHEMA_URN.resourceType],
      id: resource.name,
      name: resource.name,
      endpoint: resource.endpoint,
      description: resource.description,
      schema: resource.schema.id,
      schemaExtensions: resource.extensions.map((schema) => ({ schema, required: false })),
      meta: { resourceType: 'ResourceType', location: this.location(`/ResourceTypes/${resource.name}`) },
    };
  }

  schemas() {
    return list(RESOURCES.map((resource) => this.schema(resource)));
  }

  schema(resource: (typeof RESOURCES)[number]) {
    return schemaRepresentation(resource.schema, this.location(`/Schemas/${resource.schema.id}`));
  }

  private location(path: string): string {
    return `${this.config.publicBaseUrl}${CANONICAL_PREFIX}${path}`;
  }
}

function list(resources: unknown[]) {
  return { schemas: [SCHEMA_URN.list], totalResults: resources.length, itemsPerPage: resources.length, startIndex: 1, Resources: resources };
}

function unknownEntry(kind: string, id: string): never {
  throw notFound(`"${id.slice(0, 200)}" is not a ${kind} of this service; GET ${kind === 'schema' ? 'Schemas' : 'ResourceTypes'} lists them.`);
}

/**
 * SCIM discovery (RFC 7644 section 4). Any valid token of the organization may read it
 * (CREDENTIAL-MANAGEMENT.md "Users"): provisioning clients read it before anything else.
 */
const DISCOVERY = 'any valid token of the organization';
/** RFC 7643 sections 5-7 define these documents; they are described here by reference. */
const DISCOVERY_DOCUMENT = { type: 'object' as const, description: 'RFC 7643 section 5 (ServiceProviderConfig), 6 (ResourceType) or 7 (Schema)' };

@ApiTags('credential management: discovery')
@ApiBearerAuth()
@ScimMediaTypes()
@AuthorizedBy(DISCOVERY)
@Controller(credentialManagementPaths('ServiceProviderConfig'))
export class ServiceProviderConfigController {
  constructor(private readonly documents: DiscoveryDocuments) {}

  @Get()
  @ApiOperation({ summary: 'What this SCIM service provider supports (RFC 7644 4)' })
  @ApiSchemaResponse(DISCOVERY_DOCUMENT)
  get() {
    return this.documents.serviceProviderConfig();
  }
}

@ApiTags('credential management: discovery')
@ApiBearerAuth()
@ScimMediaTypes()
@AuthorizedBy(DISCOVERY)
@PathFormats({ name: 'resourceTypeName' })
@Controller(credentialManagementPaths('ResourceTypes'))
export class ResourceTypesController {
  constructor(private readonly documents: DiscoveryDocuments) {}

  @Get()
  @ApiOperation({ summary: 'The resource types (RFC 7644 4)' })
  @ApiSchemaResponse(scimListSchema(DISCOVERY_DOCUMENT))
  list() {
    return this.documents.resourceTypes();
  }

  @Get(':name')
  @ApiOperation({ summary: 'One resource type, by name' })
  @ApiSchemaResponse(DISCOVERY_DOCUMENT)
  get(@Param('name') name: string) {
    const resource = RESOURCES.find((r) => r.name === name);
    return resource ? this.documents.resourceType(resource) : unknownEntry('resource type', name);
  }
}

@ApiTags('credential management: discovery')
@ApiBearerAuth()
@ScimMediaTypes()
@AuthorizedBy(DISCOVERY)
@PathFormats({ urn: 'schemaUrn' })
@Controller(credentialManagementPaths('Schemas'))
export class SchemasController {
  constructor(private readonly documents: DiscoveryDocuments) {}

  @Get()
  @ApiOperation({ summary: 'The schemas of the resources (RFC 7643 7)' })
  @ApiSchemaResponse(scimListSchema(DISCOVERY_DOCUMENT))
  list() {
    return this.documents.schemas();
  }

  @Get(':urn')
  @ApiOperation({ summary: 'One schema, by URN' })
  @ApiSchemaResponse(DISCOVERY_DOCUMENT)
  get(@Param('urn') urn: string) {
    const resource = RESOURCES.find((r) => r.schema.id === urn);
    return resource ? this.documents.schema(resource) : unknownEntry('schema', urn);
  }
}
