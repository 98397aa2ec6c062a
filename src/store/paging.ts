import { type Kysely, type SelectQueryBuilder, sql } from 'kysely';
import { z } from 'zod';
import { ApiError } from '../shared/api-error.js';
import type { Database } from './schema.js';

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

/**
 * Tables listed by cursor. Each row has an `id`, the `account_id` that owns it and a `seq` that
 * grows with insertion: the cursor names an id, the page is read by its `seq`.
 */
export type PagedTable = 'bot_configs' | 'phone_numbers' | 'recordings' | 'call_records';

// The column names are the same in every paged table; as SQL references they stay valid for
// whichever of them a query reads, which Kysely's typed column names cannot say of a generic table.
const SEQ = sql.ref<number>('seq');

/** The insertion order of the account's row `id`, or undefined when the account has none. */
export async function seqOf(
  db: Kysely<Database>,
  table: PagedTable,
  accountId: string,
  id: string,
): Promise<number | undefined> {
  const r = await db
    .selectFrom(table)
    .select(SEQ.as('seq'))
    .where(sql.ref('id'), '=', id)
    .where(sql.ref('account_id'), '=', accountId)
    .executeTakeFirst();
  return r?.seq;
}

/**
 * One page of `query` (already scoped and filtered), newest first: from the top, or from the
 * cursor's position. A page read towards newer rows is read oldest first (the `limit` rows right
 * after the cursor) and turned around, so every page comes back in the list's order.
 */
export async function readPage<TB extends PagedTable, O>(
  query: SelectQueryBuilder<Database, TB, O>,
  direction: PageDirection,
  limit: number,
): Promise<O[]> {
  if (direction.kind === 'newer') {
    const rows = await query.where(SEQ, '>', direction.seq).orderBy(SEQ, 'asc').limit(limit).execute();
    return rows.reverse();
  }
  const from = direction.kind === 'older' ? query.where(SEQ, '<', direction.seq) : query;
  return from.orderBy(SEQ, 'desc').limit(limit).execute();
}

/**
 * Where a page query starts reading. `noun` names the listed thing in the error for a cursor
 * the account has no row for (deleted, someone else's, mistyped).
 */
export async function pageDirection(
  page: PageQuery,
  seqOfId: (id: string) => Promise<number | undefined>,
  noun: string,
): Promise<PageDirection> {
  const cursor = page.starting_after ?? page.ending_before;
  if (cursor === undefined) return { kind: 'first' };
  const seq = await seqOfId(cursor);
  if (seq === undefined) {
    const field = page.starting_after ? 'starting_after' : 'ending_before';
    throw new ApiError('invalid-request-error', `${field}: no ${noun} with id ${cursor}`);
  }
  return { kind: page.starting_after ? 'older' : 'newer', seq };
}
