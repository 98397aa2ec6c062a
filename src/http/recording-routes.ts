import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Coordinator } from '../cluster/coordinator.js';
import { forwardRequest, wasForwarded } from '../cluster/forward.js';
import { z } from 'zod';
import { ACCESS_LINK_TRACKS, type RecordingsService } from '../recordings/recordings-service.js';
import { pageQuery } from '../store/paging.js';
import { ApiError, validationError } from './errors.js';

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

export interface RecordingRoutesOptions {
  service: RecordingsService;
  /** With several nodes, a recording kept in a node's data dir (no bucket) is that node's to serve. */
  cluster: Coordinator;
}

/**
 * Whether the request was passed to the node that holds the recording's files (its answer is
 * sent); a 503 when that node is not running, since the files are only there.
 */
async function forwardedToFilesNode(opts: RecordingRoutesOptions, id: string, request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
  if (!opts.cluster.clustered || wasForwarded(request)) return false;
  const nodeId = await opts.service.filesNodeOf(id);
  if (nodeId === undefined) return false;
  const url = await opts.cluster.nodeUrl(nodeId);
  if (url === undefined) throw new ApiError('service-unavailable', `recording ${id} is kept on node ${nodeId}, which is not running; try again when it is`);
  await forwardRequest(request, reply, url, opts.cluster.nodeId);
  return true;
}

/** Endpoint 10 of the spec and its siblings. Mounted under /v1 behind the API-key check. */
export async function recordingRoutes(app: FastifyInstance, opts: RecordingRoutesOptions): Promise<void> {
  const { service } = opts;

  app.get('/recordings', async (request) => {
    const query = listQuery.safeParse(request.query);
    if (!query.success) throw validationError(query.error, 'query');
    const { room_name, ...page } = query.data;
    return service.list(request.account, page, { roomName: room_name });
  });

  app.get('/recordings/:id', async (request) => service.get(request.account, idParam(request.params)));

  app.delete('/recordings/:id', async (request, reply) => {
    const id = idParam(request.params);
    // Only the owner's rows are looked at: another account's recording stays a 404 below.
    await service.get(request.account, id);
    if (await forwardedToFilesNode(opts, id, request, reply)) return reply;
    return service.delete(request.account, id);
  });

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
export async function recordingDownloadRoutes(app: FastifyInstance, opts: RecordingRoutesOptions): Promise<void> {
  const { service } = opts;

  app.get('/recording-downloads/:id/:file', async (request, reply) => {
    const { id, file } = request.params as { id: string; file: string };
    const track = ACCESS_LINK_TRACKS.find((t) => file === `${t}.wav`);
    if (!track || !recordingId.safeParse(id).success) throw new ApiError('not-found', 'no such recording file');
    const query = downloadQuery.safeParse(request.query);
    if (!query.success) throw new ApiError('forbidden-error', 'the download link is incomplete: it needs expires and signature');
    // The link is checked where the file is (every node shares the signing key).
    if (await forwardedToFilesNode(opts, id, request, reply)) return reply;
    const download = await service.openDownload({ id, track, ...query.data });
    reply.type('audio/wav').header('content-disposition', `attachment; filename="${download.filename}"`);
    if (download.sizeBytes !== undefined) reply.header('content-length', download.sizeBytes);
    return reply.send(download.body);
  });
}
