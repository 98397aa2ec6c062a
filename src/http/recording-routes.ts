import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ACCESS_LINK_TRACKS, type RecordingsService } from '../recordings/recordings-service.js';
import { pageQuery } from '../store/paging.js';
import { ApiError, validationError } from '../shared/api-error.js';

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

function idParam(params: unknown): string {
  const id = recordingId.safeParse((params as { id?: unknown }).id);
  if (!id.success) throw new ApiError('invalid-request-error', 'id: must be a recording id');
  return id.data;
}

/** Endpoint 10 of the spec and its siblings. Mounted under /v1 behind the API-key check. */
export async function recordingRoutes(app: FastifyInstance, opts: { service: RecordingsService }): Promise<void> {
  const { service } = opts;

  app.get('/recordings', async (request) => {
    const query = listQuery.safeParse(request.query);
    if (!query.success) throw validationError(query.error, 'query');
    const { room_name, ...page } = query.data;
    return service.list(request.account, page, { roomName: room_name });
  });

  app.get('/recordings/:id', async (request) => service.get(request.account, idParam(request.params)));

  app.delete('/recordings/:id', async (request) => service.delete(request.account, idParam(request.params)));

  app.get('/recordings/:id/access-link', async (request) => {
    const id = idParam(request.params);
    const query = accessLinkQuery.safeParse(request.query);
    if (!query.success) throw validationError(query.error, 'query');
    return service.accessLink(request.account, id, query.data.valid_for_secs, query.data.track);
  });
}

/**
 * Where access links point for recordings this service stores: no API key, the link's signature
 * and expiry are the authority. Mounted at the root.
 */
export async function recordingDownloadRoutes(app: FastifyInstance, opts: { service: RecordingsService }): Promise<void> {
  const { service } = opts;

  app.get('/recording-downloads/:id/:file', async (request, reply) => {
    const { id, file } = request.params as { id: string; file: string };
    const track = ACCESS_LINK_TRACKS.find((t) => file === `${t}.wav`);
    if (!track || !recordingId.safeParse(id).success) throw new ApiError('not-found', 'no such recording file');
    const query = downloadQuery.safeParse(request.query);
    if (!query.success) throw new ApiError('forbidden-error', 'the download link is incomplete: it needs expires and signature');
    const download = await service.openDownload({ id, track, ...query.data });
    reply.type('audio/wav').header('content-disposition', `attachment; filename="${download.filename}"`);
    if (download.sizeBytes !== undefined) reply.header('content-length', download.sizeBytes);
    return reply.send(download.body);
  });
}
