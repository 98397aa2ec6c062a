import type { Kysely, Selectable, Updateable } from 'kysely';
import { type PageDirection, readPage, seqOf } from './paging.js';
import type { Database } from './schema.js';

export type CallRecordRow = Selectable<Database['call_records']>;
export type NewCallRecordRow = Omit<CallRecordRow, 'seq'>;
/** A row without its large columns: what a list shows. */
export type CallRecordListRow = Omit<CallRecordRow, 'turns_json' | 'transcript_json'> & { has_transcript: number };

export interface CallRecordFilters {
  botConfigId?: string;
  outcome?: string;
  status?: string;
  /** ISO-8601 UTC bounds on the start, inclusive and exclusive. */
  startedFrom?: string;
  startedBefore?: string;
}

/** Call records. Reads are scoped to an account, except recovery, reaping and retention. */
export class CallRecordsRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(row: NewCallRecordRow): Promise<void> {
    await this.db.insertInto('call_records').values(row).execute();
  }

  /** The call's one write at its end; only a row still in progress is written (a reaped one stays as found). */
  async complete(id: string, changes: Updateable<Database['call_records']>): Promise<boolean> {
    const result = await this.db
      .updateTable('call_records')
      .set(changes)
      .where('id', '=', id)
      .where('status', '=', 'in-progress')
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async get(accountId: string, id: string): Promise<CallRecordRow | undefined> {
    return this.db
      .selectFrom('call_records')
      .selectAll()
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
  }

  /**
   * Rows a dead node left in progress are over: marked `interrupted` with the time they were
   * found. Returns how many.
   */
  async interruptNode(nodeId: string, foundAt: string, reason: string): Promise<number> {
    const result = await this.db
      .updateTable('call_records')
      .set({ status: 'interrupted', outcome: 'interrupted', end_reason: reason, ended_at: foundAt })
      .where('status', '=', 'in-progress')
      .where('node_id', '=', nodeId)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  async seqOf(accountId: string, id: string): Promise<number | undefined> {
    return seqOf(this.db, 'call_records', accountId, id);
  }

  private filtered(accountId: string, filters: CallRecordFilters) {
    let query = this.db.selectFrom('call_records').where('account_id', '=', accountId);
    if (filters.botConfigId) query = query.where('bot_config_id', '=', filters.botConfigId);
    if (filters.outcome) query = query.where('outcome', '=', filters.outcome);
    if (filters.status) query = query.where('status', '=', filters.status);
    if (filters.startedFrom) query = query.where('started_at', '>=', filters.startedFrom);
    if (filters.startedBefore) query = query.where('started_at', '<', filters.startedBefore);
    return query;
  }

  async count(accountId: string, filters: CallRecordFilters): Promise<number> {
    const r = await this.filtered(accountId, filters)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** Newest first, like every list of the API; the turns and the transcript stay in the store. */
  async list(
    accountId: string,
    direction: PageDirection,
    limit: number,
    filters: CallRecordFilters,
  ): Promise<CallRecordListRow[]> {
    const query = this.filtered(accountId, filters).select([
      'seq',
      'id',
      'account_id',
      'kind',
      'bot_config_id',
      'profile',
      'from_number',
      'to_number',
      'call_sid',
      'room_name',
      'recording_id',
      'node_id',
      'status',
      'started_at',
      'ended_at',
      'duration_ms',
      'outcome',
      'end_reason',
      'summary_json',
      (eb) => eb.case().when('transcript_json', 'is not', null).then(1).else(0).end().as('has_transcript'),
    ]);
    return readPage(query, direction, limit);
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('call_records')
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /**
   * Retention: records (and their transcripts) of calls that started before `before` (days ago:
   * no call lasts that long, so one still in progress is one nobody reaped). Returns how many.
   */
  async deleteStartedBefore(before: string): Promise<number> {
    const result = await this.db.deleteFrom('call_records').where('started_at', '<', before).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** For recordings: the call (with a transcript) each recording belongs to. */
  async transcriptsOfRecordings(accountId: string, recordingIds: string[]): Promise<Map<string, string>> {
    if (recordingIds.length === 0) return new Map();
    const rows = await this.db
      .selectFrom('call_records')
      .select(['id', 'recording_id'])
      .where('account_id', '=', accountId)
      .where('recording_id', 'in', recordingIds)
      .where('transcript_json', 'is not', null)
      .execute();
    return new Map(rows.map((r) => [r.recording_id!, r.id]));
  }
}
