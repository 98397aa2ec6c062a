import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { PhoneNumberService } from '../telephony/phone-number-service.js';
import { pageQuery } from '../store/paging.js';
import { errorResponses } from './error-responses.js';
import { named } from './openapi.js';
import { availableNumbers, boughtNumber, purchasedNumbers, releasedNumber } from './response-schemas.js';

const digits = (min: number, max: number) =>
  z.string().regex(new RegExp(`^\\d{${min},${max}}$`), `must be ${min}–${max} digits`);

const searchQuery = z
  .object({
    region: z
      .string()
      .regex(/^[A-Za-z]{2}$/, 'must be a two-letter region code such as CA')
      .optional(),
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
    number: z
      .string()
      .regex(/^\+[1-9]\d{6,14}$/, 'must be an E.164 phone number such as +14155550123')
      .optional(),
    name: z.string().min(1).max(256).optional(),
  })
  .strict();

const listQuery = z.intersection(
  pageQuery,
  z.object({ filter_name: z.string().min(1).max(256).optional(), filter_number: z.string().min(1).max(32).optional() }),
);

/** Endpoints 6–8 of the spec, plus release. Mounted under /v1 behind the API-key check. */
export async function phoneNumberRoutes(
  instance: FastifyInstance,
  opts: { service: PhoneNumberService },
): Promise<void> {
  const app = instance.withTypeProvider<ZodTypeProvider>();
  const { service } = opts;

  app.get(
    '/list-available-numbers',
    {
      schema: {
        summary: 'Search numbers the carrier can sell',
        querystring: searchQuery,
        response: { 200: availableNumbers, ...errorResponses('carrier-error') },
      },
    },
    async (request) => {
      const q = request.query;
      return service.search({
        region: q.region?.toUpperCase(),
        city: q.city,
        areacode: q.areacode,
        contains: q.contains,
        startsWith: q.starts_with,
        endsWith: q.ends_with,
        limit: q.limit,
      });
    },
  );

  app.post(
    '/buy-phone-number',
    {
      schema: {
        summary: 'Buy a number (the one given, or any); its voice webhook points at this service',
        description: 'Without a body, any available number is bought.',
        // No body at all buys a random number, as the hosted service did.
        body: named(app, 'BuyPhoneNumberRequest', buyPhoneNumberBody).optional(),
        response: { 200: boughtNumber, ...errorResponses('not-found', 'conflict-error', 'carrier-error') },
      },
    },
    async (request) => service.buy(request.account, request.body?.number, request.body?.name),
  );

  app.get(
    '/purchased-phone-numbers',
    {
      schema: {
        summary: 'Numbers this account holds, newest first',
        querystring: listQuery,
        response: { 200: purchasedNumbers },
      },
    },
    async (request) => {
      const { filter_name, filter_number, ...page } = request.query;
      return service.list(request.account, page, { name: filter_name, number: filter_number });
    },
  );

  app.delete(
    '/release-phone-number/:id',
    {
      schema: {
        summary: 'Release a purchased number at the carrier',
        params: z.object({
          id: z.string().min(1, 'must be a purchased number id').max(128, 'must be a purchased number id'),
        }),
        response: { 200: releasedNumber, ...errorResponses('not-found', 'conflict-error', 'carrier-error') },
      },
    },
    async (request) => service.release(request.account, request.params.id),
  );
}
