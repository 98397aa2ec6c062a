import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ACCESS_LINK_TRACKS, type RecordingsService } from '../recordings/recordings-service.js';
import { pageQuery } from '../store/paging.js';
import { errorResponses } from './error-responses.js';
import type { Forwarding } from './forwarding.js';
import { ApiError } from '../shared/api-error.js';
import { named } from './openapi.js';
import { accessLink, recording, recordings } from './response-schemas.js';

const listQuery = z.intersection(pageQuery, z.object({ room_name: z.string().min(1).max(256).optional() }));

const recordingId = z.string().min(1).max(128);

const accessLinkQuery = z
  .object({
    valid_for_secs: z.coerce.number().int().min(900).max(43200).default(3600),
    /** Which file: the mixed conversation by default, or one side of it. */
    track: z.enum(ACCESS_LINK_TRACKS).default('mixed'),
  })
  .strict();

const downloadQuery = z.object({
  expires: z.coerce.number().int().min(0),
  signature: z.string().min(1).max(128),
});

/** An id that cannot be a recording's is refused before any lookup. */
const idParams = z.object({ id: recordingId.min(1, 'must be a recording id').max(128, 'must be a recording id') });

export interface RecordingRoutesOptions {
  service: RecordingsService;
  /** With several nodes, a recording kept in a node's data dir (no bucket) is that node's to serve. */
  forwarding: Forwarding;
}

/**
 * The node that keeps recording `id`'s files, when that is another one; a 503 when that node is
 * not running, since the files are only there.
 */
async function filesNodeElsewhere(opts: RecordingRoutesOptions, id: string): Promise<string | undefined> {
  const nodeId = await opts.service.filesNodeOf(id);
  if (nodeId === undefined) return undefined;
  const url = await opts.forwarding.nodeUrl(nodeId);
  if (url === undefined)
    throw new ApiError(
      'service-unavailable',
      `recording ${id} is kept on node ${nodeId}, which is not running; try again when it is`,
    );
  return url;
}

/** A download link's parts, or the error its handler answers with. */
function downloadOf(request: FastifyRequest<{ Params: { id: string; file: string } }>) {
  const { id, file } = request.params;
  const track = ACCESS_LINK_TRACKS.find((t) => file === `${t}.wav`);
  if (!track || !recordingId.safeParse(id).success) throw new ApiError('not-found', 'no such recording file');
  const query = downloadQuery.safeParse(request.query);
  if (!query.success)
    throw new ApiError('forbidden-error', 'the download link is incomplete: it needs expires and signature');
  return { id, track, ...query.data };
}

/** Endpoint 10 of the spec and its siblings. Mounted under /v1 behind the API-key check. */
export async function recordingRoutes(instance: FastifyInstance, opts: RecordingRoutesOptions): Promise<void> {
  const app = instance.withTypeProvider<ZodTypeProvider>();
  const { service } = opts;
  const one = named(app, 'Recording', recording);

  app.get(
    '/recordings',
    { schema: { summary: 'Recordings, newest first', querystring: listQuery, response: { 200: recordings } } },
    async (request) => {
      const { room_name, ...page } = request.query;
      return service.list(request.account, page, { roomName: room_name });
    },
  );

  app.get(
    '/recordings/:id',
    { schema: { summary: 'One recording', params: idParams, response: { 200: one, ...errorResponses('not-found') } } },
    async (request) => service.get(request.account, request.params.id),
  );

  app.delete(
    '/recordings/:id',
    {
      schema: {
        summary: 'Delete a recording and its files',
        description: 'A recording still in progress is refused (400); delete it once the call has ended.',
        params: idParams,
        response: { 200: one, ...errorResponses('not-found', 'service-unavailable') },
      },
      preHandler: opts.forwarding.hook(async (request: FastifyRequest<{ Params: { id: string } }>) => {
        // Only the owner's rows are looked at: another account's recording stays a 404 here.
        await service.get(request.account, request.params.id);
        return filesNodeElsewhere(opts, request.params.id);
      }),
    },
    async (request) => service.delete(request.account, request.params.id),
  );

  app.get(
    '/recordings/:id/access-link',
    {
      schema: {
        summary: 'An expiring download link',
        params: idParams,
        querystring: accessLinkQuery,
        response: { 200: accessLink, ...errorResponses('not-found', 'forbidden-error') },
      },
    },
    async (request) =>
      service.accessLink(request.account, request.params.id, request.query.valid_for_secs, request.query.track),
  );
}

/**
 * Where access links point for recordings this service stores: no API key, the link's signature
 * and expiry are the authority. Mounted at the root.
 */
export async function recordingDownloadRoutes(app: FastifyInstance, opts: RecordingRoutesOptions): Promise<void> {
  const { service } = opts;

  app.get<{ Params: { id: string; file: string } }>(
    '/recording-downloads/:id/:file',
    {
      schema: {
        summary: 'Download a recording file through an access link',
        description:
          'The link from GET /v1/recordings/{id}/access-link; its `expires` and `signature` are the authority, no API key.',
        // Documented, not checked here: a link without them is a 403 from the handler, not a 400.
        querystring: z.object({
          expires: z.unknown().optional().describe('Unix seconds, as the access link carries it'),
          signature: z.unknown().optional().describe('as the access link carries it'),
        }),
        response: {
          200: { description: 'The WAV file', content: { 'audio/wav': { schema: z.string().describe('binary') } } },
          ...errorResponses('forbidden-error', 'not-found', 'service-unavailable'),
        },
      },
      // The link is checked where the file is (every node shares the signing key).
      preHandler: opts.forwarding.hook((request: FastifyRequest<{ Params: { id: string; file: string } }>) =>
        filesNodeElsewhere(opts, downloadOf(request).id),
      ),
    },
    async (request, reply) => {
      const download = await service.openDownload(downloadOf(request));
      reply.type('audio/wav').header('content-disposition', `attachment; filename="${download.filename}"`);
      if (download.sizeBytes !== undefined) reply.header('content-length', download.sizeBytes);
      return reply.send(download.body);
    },
  );
}
