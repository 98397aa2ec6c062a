import type { Kysely, Selectable, Updateable } from 'kysely';
import { type PageDirection, readPage, seqOf } from './paging.js';
import type { Database } from './schema.js';

export type RecordingRow = Selectable<Database['recordings']>;
export type NewRecordingRow = Omit<RecordingRow, 'seq' | 'node_id'> & { node_id?: string | null };

/** Call recordings. Reads are scoped to an account, except recovery and signed downloads. */
export class RecordingsRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(row: NewRecordingRow): Promise<void> {
    await this.db.insertInto('recordings').values(row).execute();
  }

  async update(id: string, changes: Updateable<Database['recordings']>): Promise<void> {
    await this.db.updateTable('recordings').set(changes).where('id', '=', id).execute();
  }

  async get(accountId: string, id: string): Promise<RecordingRow | undefined> {
    return this.db
      .selectFrom('recordings')
      .selectAll()
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
  }

  /** For a download link: the link's signature already names the recording. */
  async getById(id: string): Promise<RecordingRow | undefined> {
    return this.db.selectFrom('recordings').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Recordings left `in-progress` whose files are in the data dir `nodeId` (or anyone's, for rows without one), oldest first. */
  async listInProgress(nodeId: string): Promise<RecordingRow[]> {
    return this.db
      .selectFrom('recordings')
      .selectAll()
      .where((eb) =>
        eb.or([
          eb('status', '=', 'in-progress'),
          // Closed by another node while this one was dead (abandonNode): the files are still to repair.
          eb.and([eb('status', '=', 'finished'), eb('tracks_json', 'is', null)]),
        ]),
      )
      .where((eb) => eb.or([eb('node_id', '=', nodeId), eb('node_id', 'is', null)]))
      .orderBy('seq', 'asc')
      .execute();
  }

  /**
   * A dead node's recordings in progress are over: marked finished, with no duration or tracks
   * until that node, started again on its data dir, repairs their files. Returns how many.
   */
  async abandonNode(nodeId: string): Promise<number> {
    const result = await this.db
      .updateTable('recordings')
      .set({ status: 'finished', finished_at: new Date().toISOString() })
      .where('status', '=', 'in-progress')
      .where('node_id', '=', nodeId)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  async seqOf(accountId: string, id: string): Promise<number | undefined> {
    return seqOf(this.db, 'recordings', accountId, id);
  }

  async count(accountId: string, filters: { roomName?: string }): Promise<number> {
    let query = this.db
      .selectFrom('recordings')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', accountId);
    if (filters.roomName) query = query.where('room_name', '=', filters.roomName);
    const r = await query.executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** Newest first, like every list of the API. */
  async list(
    accountId: string,
    direction: PageDirection,
    limit: number,
    filters: { roomName?: string },
  ): Promise<RecordingRow[]> {
    let query = this.db.selectFrom('recordings').selectAll().where('account_id', '=', accountId);
    if (filters.roomName) query = query.where('room_name', '=', filters.roomName);
    return readPage(query, direction, limit);
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('recordings')
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}
