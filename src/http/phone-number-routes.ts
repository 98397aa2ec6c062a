import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { PhoneNumberService } from '../telephony/phone-number-service.js';
import { pageQuery } from '../store/paging.js';
import { ApiError, validationError } from '../shared/api-error.js';

const digits = (min: number, max: number) => z.string().regex(new RegExp(`^\\d{${min},${max}}$`), `must be ${min}–${max} digits`);

const searchQuery = z
  .object({
    region: z.string().regex(/^[A-Za-z]{2}$/, 'must be a two-letter region code such as CA').optional(),
    city: z.string().min(1).max(100).optional(),
    areacode: digits(3, 3).optional(),
    contains: digits(3, 7).optional(),
    starts_with: digits(3, 7).optional(),
    ends_with: digits(3, 7).optional(),
    limit: z.coerce.number().int().min(1).max(100).default(50),
  })
  .strict()
  .refine((q) => !q.city || q.region, { message: 'city needs region', path: ['city'] })
  .refine((q) => [q.contains, q.starts_with, q.ends_with].filter((v) => v !== undefined).length <= 1, {
    message: 'give at most one of contains, starts_with, ends_with',
  });

export const buyPhoneNumberBody = z
  .object({
    number: z.string().regex(/^\+[1-9]\d{6,14}$/, 'must be an E.164 phone number such as +14155550123').optional(),
    name: z.string().min(1).max(256).optional(),
  })
  .strict();

const listQuery = z.intersection(
  pageQuery,
  z.object({ filter_name: z.string().min(1).max(256).optional(), filter_number: z.string().min(1).max(32).optional() }),
);

/** Endpoints 6–8 of the spec, plus release. Mounted under /v1 behind the API-key check. */
export async function phoneNumberRoutes(app: FastifyInstance, opts: { service: PhoneNumberService }): Promise<void> {
  const { service } = opts;

  app.get('/list-available-numbers', async (request) => {
    const query = searchQuery.safeParse(request.query);
    if (!query.success) throw validationError(query.error, 'query');
    const q = query.data;
    return service.search({
      region: q.region?.toUpperCase(),
      city: q.city,
      areacode: q.areacode,
      contains: q.contains,
      startsWith: q.starts_with,
      endsWith: q.ends_with,
      limit: q.limit,
    });
  });

  app.post('/buy-phone-number', async (request) => {
    // No body at all buys a random number, as the hosted service did.
    const body = buyPhoneNumberBody.safeParse(request.body ?? {});
    if (!body.success) throw validationError(body.error);
    return service.buy(request.account, body.data.number, body.data.name);
  });

  app.get('/purchased-phone-numbers', async (request) => {
    const query = listQuery.safeParse(request.query);
    if (!query.success) throw validationError(query.error, 'query');
    const { filter_name, filter_number, ...page } = query.data;
    return service.list(request.account, page, { name: filter_name, number: filter_number });
  });

  app.delete('/release-phone-number/:id', async (request) => {
    const id = (request.params as { id?: string }).id ?? '';
    if (id.length === 0 || id.length > 128) throw new ApiError('invalid-request-error', 'id: must be a purchased number id');
    return service.release(request.account, id);
  });
}
