import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { CALL_OUTCOMES } from '../records/call-record.js';
import type { CallRecordsService } from '../records/call-records-service.js';
import { transcriptToVtt } from '../records/transcript-vtt.js';
import { pageQuery } from '../store/paging.js';
import { PageTokens } from './calls-page-token.js';
import { callList, callRecord, callSummary, pageLink, transcript } from './call-schemas.js';
import { errorResponses } from './error-responses.js';
import { named } from './openapi.js';
import type { UrlSigner } from '../security/url-signer.js';
import { callsPageHtml } from '../records/page/calls-page.js';

const isoTime = z.iso.datetime({ offset: true });

const listQuery = z.intersection(
  pageQuery,
  z.object({
    bot_config_id: z.string().min(1).max(128).optional().describe('calls of this configuration'),
    outcome: z.enum(CALL_OUTCOMES).optional(),
    status: z.enum(['in-progress', 'ended', 'interrupted']).optional(),
    started_after: isoTime.optional().describe('calls that started at or after this time (ISO-8601)'),
    started_before: isoTime.optional().describe('calls that started before this time (ISO-8601)'),
  }),
);

const idParams = z.object({ id: z.string().min(1, 'must be a call id').max(128, 'must be a call id') });

const VTT = 'text/vtt';

export interface CallRoutesOptions {
  service: CallRecordsService;
  /** Signs the calls page's links. */
  signer: UrlSigner;
  publicUrl: string;
}

/** Call records: list, one, its transcript (JSON or WebVTT), delete; and a signed link to the calls page. */
export async function callRoutes(instance: FastifyInstance, opts: CallRoutesOptions): Promise<void> {
  const app = instance.withTypeProvider<ZodTypeProvider>();
  const { service } = opts;
  const tokens = new PageTokens(opts.signer);
  const one = named(app, 'CallRecord', callRecord);
  const summary = named(app, 'CallSummary', callSummary);
  const transcriptSchema = named(app, 'Transcript', transcript);

  app.get(
    '/calls',
    {
      schema: {
        summary: 'Call records, newest first',
        description:
          'Every phone call and room, with its outcome and counters; filter by configuration, outcome, status and start time.',
        querystring: listQuery,
        response: { 200: callList },
      },
    },
    async (request) => {
      const { bot_config_id, outcome, status, started_after, started_before, ...page } = request.query;
      return service.list(request.account, page, {
        botConfigId: bot_config_id,
        outcome,
        status,
        startedFrom: started_after && new Date(started_after).toISOString(),
        startedBefore: started_before && new Date(started_before).toISOString(),
      });
    },
  );

  app.get(
    '/calls/page-link',
    {
      schema: {
        summary: 'A signed link to the calls page',
        description: 'Opens the calls page signed in to this account, read-only, until it expires.',
        querystring: z.object({ valid_for_secs: z.coerce.number().int().min(60).max(86_400).default(3600) }).strict(),
        response: { 200: pageLink },
      },
    },
    async (request) => {
      const expires = Math.floor(Date.now() / 1000) + request.query.valid_for_secs;
      return { url: `${opts.publicUrl}/calls-page#token=${tokens.issue(request.account.id, expires)}`, expires };
    },
  );

  app.get(
    '/calls/:id',
    {
      schema: {
        summary: 'One call record, with each turn’s latency breakdown',
        params: idParams,
        response: { 200: one, ...errorResponses('not-found') },
      },
    },
    async (request) => service.get(request.account, request.params.id),
  );

  const transcriptDoc = (summaryText: string) => ({
    summary: summaryText,
    description:
      'JSON, or WebVTT (`<v Caller>` / `<v Bot>` cues, timed from the call’s start like its recording) with `Accept: text/vtt` or the `.vtt` path.',
    params: idParams,
    response: {
      200: {
        description: 'The transcript',
        content: { 'application/json': { schema: transcriptSchema }, [VTT]: { schema: z.string() } },
      },
      ...errorResponses('not-found'),
    },
  });

  app.get('/calls/:id/transcript', { schema: transcriptDoc('A call’s transcript') }, async (request, reply) => {
    const found = await service.transcript(request.account, request.params.id);
    if (prefersVtt(request.headers.accept))
      return reply.type(`${VTT}; charset=utf-8`).send(transcriptToVtt(found.entries));
    return found;
  });

  app.get(
    '/calls/:id/transcript.vtt',
    { schema: transcriptDoc('A call’s transcript as WebVTT') },
    async (request, reply) => {
      const found = await service.transcript(request.account, request.params.id);
      return reply.type(`${VTT}; charset=utf-8`).send(transcriptToVtt(found.entries));
    },
  );

  app.get('/calls/:id/transcript.json', { schema: transcriptDoc('A call’s transcript as JSON') }, async (request) =>
    service.transcript(request.account, request.params.id),
  );

  app.delete(
    '/calls/:id',
    {
      schema: {
        summary: 'Delete a call record and its transcript',
        description:
          'A call in progress is refused (400). Its recording, if any, is deleted through the recordings API.',
        params: idParams,
        response: { 200: summary, ...errorResponses('not-found') },
      },
    },
    async (request) => service.delete(request.account, request.params.id),
  );
}

/** Whether an Accept header ranks text/vtt above JSON (by q, then by order); JSON when it names neither. */
export function prefersVtt(accept: string | undefined): boolean {
  if (!accept) return false;
  let best: { type: string; q: number } | undefined;
  for (const part of accept.split(',')) {
    const [type = '', ...params] = part.trim().toLowerCase().split(';');
    if (type !== VTT && type !== 'application/json') continue;
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const q = qParam ? Number(qParam.slice(2)) : 1;
    if (Number.isFinite(q) && q > 0 && (!best || q > best.q)) best = { type, q };
  }
  return best?.type === VTT;
}

/** GET /calls-page: the calls page (no API key to load it; it signs in to the API itself). Mounted at the root. */
export async function callsPageRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/calls-page',
    {
      schema: {
        summary: 'The calls page',
        description:
          'Recent calls and each call’s transcript beside a waterfall of its turns; signs in with an API key or a link from GET /v1/calls/page-link.',
        response: { 200: { description: 'HTML', content: { 'text/html': { schema: z.string() } } } },
      },
    },
    async (_request, reply) => {
      reply.header('cache-control', 'no-store');
      reply.header(
        'content-security-policy',
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; media-src 'self' https:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      );
      return reply.type('text/html; charset=utf-8').send(callsPageHtml());
    },
  );
}
