import { z } from 'zod';

export const MAX_PAGE_LIMIT = 100;

/** Query of every list endpoint: Stripe-style cursors over ids, newest first. */
export const pageQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(MAX_PAGE_LIMIT).default(MAX_PAGE_LIMIT),
    starting_after: z.string().min(1).max(128).optional(),
    ending_before: z.string().min(1).max(128).optional(),
  })
  .refine((q) => !(q.starting_after && q.ending_before), {
    message: 'give starting_after or ending_before, not both',
  });

export type PageQuery = z.output<typeof pageQuery>;

/** Which way to read from a cursor's position: `older` continues a newest-first list. */
export type PageDirection = { kind: 'first' } | { kind: 'older'; seq: number } | { kind: 'newer'; seq: number };
