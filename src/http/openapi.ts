import { z } from 'zod';
import { telephonyConfigBody } from '../bots/bot-config-schema.js';
import { startBotBody } from '../bots/start-bot-schema.js';
import { domainConfigBody } from '../dialin/pinless-config.js';
import { buyPhoneNumberBody } from './phone-number-routes.js';
import { ERROR_TYPES } from '../shared/api-error.js';

function schemaOf(schema: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.$schema;
  return json;
}

const errorResponse = {
  description: 'Error in the hosted service shape',
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
};

const commonErrors = {
  '400': errorResponse,
  '401': errorResponse,
  '404': errorResponse,
  '413': errorResponse,
  '415': errorResponse,
};

const idParam = { name: 'id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } };
const pageParams = [
  { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100, default: 100 } },
  { name: 'starting_after', in: 'query', schema: { type: 'string' }, description: 'id cursor: the page after it (older)' },
  { name: 'ending_before', in: 'query', schema: { type: 'string' }, description: 'id cursor: the page before it (newer)' },
];

const storedConfig = { $ref: '#/components/schemas/StoredTelephonyConfig' };
const jsonBody = (ref: string) => ({
  required: true,
  content: { 'application/json': { schema: { $ref: `#/components/schemas/${ref}` } } },
});
const ok = (description: string, schema: unknown) => ({ description, content: { 'application/json': { schema } } });

/** OpenAPI 3.1 generated from the same zod schemas the routes validate with. */
/** Optional string query parameters, by name (the routes validate them). */
function queryParams(names: string[]): Array<Record<string, unknown>> {
  return names.map((name) => ({ name, in: 'query', required: false, schema: { type: 'string' } }));
}

/** `{total_count, data: [item]}`, the shape of every list but the configurations'. */
function listOf(itemProperties: Record<string, unknown>): Record<string, unknown> {
  return { type: 'object', properties: { total_count: { type: 'integer' }, data: { type: 'array', items: { type: 'object', properties: itemProperties } } } };
}

export function buildOpenApiDocument(version: string): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Switchboard',
      version,
      description: 'Self-hosted voice-bot hosting: bots in rooms and on phone numbers, numbers, pinless dial-in, dial-out and recordings.',
    },
    servers: [{ url: '/v1' }],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          properties: { error: { type: 'string', enum: Object.keys(ERROR_TYPES) }, info: { type: 'string' } },
        },
        TelephonyConfigRequest: schemaOf(telephonyConfigBody),
        StartBotRequest: schemaOf(startBotBody),
        BuyPhoneNumberRequest: schemaOf(buyPhoneNumberBody),
        DomainConfigRequest: schemaOf(domainConfigBody),
        StoredTelephonyConfig: {
          type: 'object',
          required: ['id', 'wssUrl', 'domain', 'twiml', 'botConfig'],
          properties: {
            id: { type: 'string', format: 'uuid' },
            wssUrl: { type: 'string', description: 'media websocket for this configuration' },
            domain: { type: 'string', description: 'the owning account' },
            twiml: { type: 'string', description: '<Response><Connect><Stream> document' },
            botConfig: { type: 'object', description: 'the stored body, provider keys masked' },
          },
        },
      },
    },
    paths: {
      '/bots/start': {
        post: {
          summary: 'Start a bot in a new room',
          description:
            'Open room_url in a browser with #<token> to talk to the bot; the token joins only that room, until max_duration. ' +
            'With "transport": "websocket" the answer is {ws_url} (the room socket with the token in its query), which Pipecat\'s WebSocketTransport connects with as is.',
          requestBody: jsonBody('StartBotRequest'),
          responses: {
            '200': ok('The room', {
              oneOf: [
                { type: 'object', required: ['room_url', 'token'], properties: { room_url: { type: 'string' }, token: { type: 'string' } } },
                { type: 'object', required: ['ws_url'], properties: { ws_url: { type: 'string' } }, description: 'with "transport": "websocket"' },
              ],
            }),
            ...commonErrors,
            '503': { ...errorResponse, description: 'service-unavailable: the server is shutting down, or runs its maximum of rooms' },
          },
        },
      },
      '/bots/twilio-config': {
        post: {
          summary: 'Create a telephony bot configuration',
          requestBody: jsonBody('TelephonyConfigRequest'),
          responses: { '200': ok('Created', storedConfig), ...commonErrors },
        },
        get: {
          summary: 'List telephony bot configurations, newest first',
          parameters: pageParams,
          responses: { '200': ok('Configurations', { type: 'array', items: storedConfig }), ...commonErrors },
        },
      },
      '/bots/twilio-config/{id}': {
        parameters: [idParam],
        post: {
          summary: 'Replace a telephony bot configuration',
          description: 'Provider keys sent back exactly as masked on read keep their stored value.',
          requestBody: jsonBody('TelephonyConfigRequest'),
          responses: { '200': ok('Updated', storedConfig), ...commonErrors },
        },
        get: { summary: 'Read a telephony bot configuration', responses: { '200': ok('Configuration', storedConfig), ...commonErrors } },
        delete: {
          summary: 'Delete a telephony bot configuration',
          responses: {
            '200': ok('Deleted', { type: 'object', properties: { deleted: { type: 'boolean' }, id: { type: 'string' } } }),
            ...commonErrors,
          },
        },
      },
      '/list-available-numbers': {
        get: {
          summary: 'Search numbers the carrier can sell',
          parameters: queryParams(['region', 'city', 'areacode', 'contains', 'starts_with', 'ends_with', 'limit']),
          responses: { '200': ok('Numbers', listOf({ number: { type: 'string' }, region: { type: 'string' }, city: { type: 'string' } })), ...commonErrors },
        },
      },
      '/buy-phone-number': {
        post: {
          summary: 'Buy a number (the one given, or any); its voice webhook points at this service',
          requestBody: jsonBody('BuyPhoneNumberRequest'),
          responses: { '200': ok('Bought', { type: 'object', properties: { id: { type: 'string' }, number: { type: 'string' } } }), ...commonErrors },
        },
      },
      '/purchased-phone-numbers': {
        get: {
          summary: 'Numbers this account holds, newest first',
          parameters: [...pageParams, ...queryParams(['filter_name', 'filter_number'])],
          responses: { '200': ok('Numbers', listOf({ id: { type: 'string' }, number: { type: 'string' }, region: { type: 'string' } })), ...commonErrors },
        },
      },
      '/release-phone-number/{id}': {
        parameters: [idParam],
        delete: { summary: 'Release a purchased number at the carrier', responses: { '200': ok('Released', { type: 'object' }), ...commonErrors } },
      },
      '/': {
        get: { summary: 'The account domain and its pinless dial-in entries', responses: { '200': ok('Domain', { type: 'object' }), ...commonErrors } },
        post: {
          summary: 'Replace the pinless dial-in entries (not a merge)',
          description: 'Each room_creation_api gets a signed test POST {To, test: true}; calls to the numbers POST {From, To, callId, callDomain} there.',
          requestBody: jsonBody('DomainConfigRequest'),
          responses: { '200': ok('Domain', { type: 'object' }), ...commonErrors },
        },
      },
      '/recordings': {
        get: {
          summary: 'Recordings, newest first',
          parameters: [...pageParams, ...queryParams(['room_name'])],
          responses: { '200': ok('Recordings', listOf({ id: { type: 'string' }, room_name: { type: 'string' }, status: { type: 'string' } })), ...commonErrors },
        },
      },
      '/recordings/{id}': {
        parameters: [idParam],
        get: { summary: 'One recording', responses: { '200': ok('Recording', { type: 'object' }), ...commonErrors } },
        delete: { summary: 'Delete a recording and its files', responses: { '200': ok('Deleted', { type: 'object' }), ...commonErrors } },
      },
      '/recordings/{id}/access-link': {
        parameters: [idParam],
        get: {
          summary: 'An expiring download link',
          parameters: queryParams(['valid_for_secs', 'track']),
          responses: { '200': ok('Link', { type: 'object', properties: { download_link: { type: 'string' }, expires: { type: 'integer' } } }), ...commonErrors },
        },
      },
    },
  };
}
