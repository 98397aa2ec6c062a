import { z } from 'zod';
import { telephonyConfigBody } from '../bots/bot-config-schema.js';
import { startBotBody } from '../bots/start-bot-schema.js';
import { ERROR_TYPES } from './errors.js';

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

const configIdParam = { name: 'id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } };
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
export function buildOpenApiDocument(version: string): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Switchboard',
      version,
      description: 'Self-hosted voice-bot hosting: telephony bot configurations, media streams and TwiML.',
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
          description: 'Open room_url in a browser with #<token> to talk to the bot; the token joins only that room, until max_duration.',
          requestBody: jsonBody('StartBotRequest'),
          responses: {
            '200': ok('The room', { type: 'object', required: ['room_url', 'token'], properties: { room_url: { type: 'string' }, token: { type: 'string' } } }),
            ...commonErrors,
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
        parameters: [configIdParam],
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
    },
  };
}
