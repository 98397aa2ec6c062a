import { randomUUID } from 'node:crypto';
import type { Clock } from '../shared/clock.js';
import type { Logger } from 'pino';
import type { BotConfigForCall } from '../bots/bot-config-service.js';
import { isSpeechToSpeech } from '../bots/profiles.js';
import { botSettings } from '../pipeline/bot-settings.js';
import { ApiError } from '../shared/api-error.js';
import type { Account } from '../store/accounts-repo.js';
import type {
  CallRecordFilters,
  CallRecordListRow,
  CallRecordRow,
  CallRecordsRepo,
} from '../store/call-records-repo.js';
import { type PageQuery, pageDirection } from '../store/paging.js';
import { type BuiltCallRecord, CallRecordBuilder } from './call-record-builder.js';
import type {
  CallOutcome,
  CallRecordView,
  CallStatus,
  CallSummaryView,
  StoredSummary,
  Transcript,
  TurnBreakdown,
} from './call-record.js';
import type { StatusCallbacks } from './status-callback.js';
import { turnStages } from './turn-stages.js';

/** Where the per-turn stages go for /metrics (ServiceMetrics.turnStage). */
export interface TurnStageSink {
  turnStage(stage: string, vendor: string, ms: number): void;
}

export interface CallRecordsServiceDeps {
  repo: CallRecordsRepo;
  /** This node's id: its rows carry it, and whoever reaps the node marks them interrupted. */
  nodeId: string;
  log: Logger;
  /** Records (and transcripts) of calls older than this are deleted. */
  retentionDays: number;
  statusCallbacks: StatusCallbacks;
  metrics?: TurnStageSink;
  /** The calls' clock (shared/clock.ts): a record's times are on it, as the call's own. Wall time by default. */
  clock?: Clock;
}

export interface BeginCallOptions {
  kind: 'phone' | 'room';
  config: BotConfigForCall;
  roomName?: string;
  from?: string;
  to?: string;
  recordingId?: string;
  log: Logger;
}

/** How often old records are looked for. */
const RETENTION_SWEEP_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

function summaryOf(row: CallRecordListRow | CallRecordRow, hasTranscript: boolean): CallSummaryView {
  const summary = row.summary_json ? (JSON.parse(row.summary_json) as StoredSummary) : undefined;
  return {
    id: row.id,
    kind: row.kind as CallSummaryView['kind'],
    status: row.status as CallStatus,
    bot_config_id: row.bot_config_id,
    profile: row.profile,
    from: row.from_number,
    to: row.to_number,
    call_sid: row.call_sid,
    room_name: row.room_name,
    recording_id: row.recording_id,
    node_id: row.node_id,
    started_at: row.started_at,
    ended_at: row.ended_at,
    duration_ms: row.duration_ms,
    outcome: row.outcome as CallOutcome | null,
    end_reason: row.end_reason,
    counts: summary?.counts ?? null,
    median_response_ms: summary?.median_response_ms ?? null,
    services: summary?.services ?? null,
    has_transcript: hasTranscript,
  };
}

function recordOf(row: CallRecordRow): CallRecordView {
  return {
    ...summaryOf(row, row.transcript_json !== null),
    turns: row.turns_json ? (JSON.parse(row.turns_json) as TurnBreakdown[]) : [],
  };
}

/**
 * Owns call records: one per call or room, inserted when it starts and written in full once when
 * it ends (the builder collects meanwhile), marked interrupted when the node serving it died,
 * deleted after the retention period; the API's list, get, transcript and delete; the
 * status callback and the per-vendor stage metrics once a call has ended.
 */
export class CallRecordsService {
  private readonly pending = new Set<Promise<unknown>>();
  private retentionTimer: NodeJS.Timeout | undefined;

  constructor(private readonly deps: CallRecordsServiceDeps) {}

  /** Starts the record of a call; give the builder to the bot (startBot). Never throws into the call. */
  begin(options: BeginCallOptions): CallRecordBuilder {
    const { config, log } = options;
    const id = randomUUID();
    const services = Object.fromEntries(
      Object.entries(config.body.services).filter((e): e is [string, string] => typeof e[1] === 'string'),
    );
    const startedAt = new Date().toISOString();
    const row = {
      id,
      account_id: config.accountId,
      kind: options.kind,
      bot_config_id: config.id,
      profile: config.body.bot_profile,
      from_number: options.from ?? null,
      to_number: options.to ?? null,
      call_sid: null,
      room_name: options.roomName ?? null,
      recording_id: options.recordingId ?? null,
      node_id: this.deps.nodeId,
      status: 'in-progress',
      started_at: startedAt,
      ended_at: null,
      duration_ms: null,
      outcome: null,
      end_reason: null,
      summary_json: null,
      turns_json: null,
      transcript_json: null,
    };
    // The row goes in when the call starts (with the carrier's call sid), so a node that dies
    // mid-call leaves it behind; a call that never started is written once, at its end.
    let inserted: Promise<boolean> = Promise.resolve(false);
    const insertAtStart = (start: { callSid?: string; from?: string; to?: string }) => {
      inserted = this.deps.repo
        .insert({
          ...row,
          // A room's transport names itself after the room: only a carrier's call has a sid.
          call_sid: options.kind === 'phone' ? (start.callSid ?? null) : null,
          from_number: start.from ?? row.from_number,
          to_number: start.to ?? row.to_number,
        })
        .then(
          () => true,
          (err: unknown) => {
            log.error({ err, callId: id }, 'could not store the call record; it is written when the call ends');
            return false;
          },
        );
      this.track(inserted);
    };
    const s2s = isSpeechToSpeech(config.body.bot_profile);
    const builder = new CallRecordBuilder({
      callId: id,
      engine: s2s ? 's2s' : 'pipeline',
      vadStopMs: botSettings(config.body).vad.stop_secs * 1000,
      ...(this.deps.clock ? { now: () => this.deps.clock!.now() } : {}),
      transcript: config.body.call_record_settings?.transcript !== false,
      onStarted: insertAtStart,
      onBuildFailed: (err) => log.error({ err, callId: id }, 'could not build the call record; it stays in progress'),
      onEnded: (built) => {
        this.track(
          this.complete(row, inserted, built, services, options, log).catch((err: unknown) =>
            log.error({ err, callId: id }, 'could not write the call record'),
          ),
        );
      },
    });
    log.debug({ callId: id }, 'call record started');
    return builder;
  }

  /** Waits for record writes in flight (shutdown, tests); never for status callbacks. */
  async drain(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  close(): void {
    clearInterval(this.retentionTimer);
    this.deps.statusCallbacks.close();
  }

  /** At start-up: this node's records a dead process left in progress are marked interrupted. */
  async recoverInterrupted(): Promise<number> {
    const found = await this.deps.repo.interruptNode(
      this.deps.nodeId,
      new Date().toISOString(),
      'the node serving the call stopped; found when it started again',
    );
    if (found > 0) this.deps.log.warn({ calls: found }, 'marked calls a dead process left in progress as interrupted');
    return found;
  }

  /** A node died mid-call: its records in progress are marked interrupted. */
  async abandonNode(deadNodeId: string): Promise<void> {
    const found = await this.deps.repo.interruptNode(
      deadNodeId,
      new Date().toISOString(),
      `the node serving the call (${deadNodeId}) died; found by node ${this.deps.nodeId}`,
    );
    if (found > 0)
      this.deps.log.warn(
        { deadNode: deadNodeId, calls: found },
        'marked the calls a dead node left in progress as interrupted',
      );
  }

  /** Deletes old records now, and every hour from now on. */
  startRetention(): void {
    const sweep = () =>
      this.sweep().catch((err: unknown) => this.deps.log.warn({ err }, 'could not delete old call records'));
    void sweep();
    this.retentionTimer = setInterval(sweep, RETENTION_SWEEP_MS);
    this.retentionTimer.unref();
  }

  async sweep(): Promise<number> {
    const before = new Date(Date.now() - this.deps.retentionDays * DAY_MS).toISOString();
    const deleted = await this.deps.repo.deleteStartedBefore(before);
    if (deleted > 0) this.deps.log.info({ deleted, before }, 'deleted call records past their retention');
    return deleted;
  }

  async list(
    account: Account,
    page: PageQuery,
    filters: CallRecordFilters,
  ): Promise<{ total_count: number; data: CallSummaryView[] }> {
    const direction = await pageDirection(page, (id) => this.deps.repo.seqOf(account.id, id), 'call');
    const [rows, total] = await Promise.all([
      this.deps.repo.list(account.id, direction, page.limit, filters),
      this.deps.repo.count(account.id, filters),
    ]);
    return { total_count: total, data: rows.map((row) => summaryOf(row, row.has_transcript === 1)) };
  }

  async get(account: Account, id: string): Promise<CallRecordView> {
    return recordOf(await this.row(account, id));
  }

  async transcript(account: Account, id: string): Promise<Transcript> {
    const row = await this.row(account, id);
    if (row.transcript_json === null) {
      if (row.status === 'in-progress')
        throw new ApiError('not-found', `call ${id} is in progress; its transcript is written when it ends`);
      throw new ApiError(
        'not-found',
        `call ${id} has no transcript (transcripts are off for its configuration, or it was interrupted)`,
      );
    }
    return { call_id: row.id, entries: JSON.parse(row.transcript_json) as Transcript['entries'] };
  }

  /** Removes the record and its transcript (the recording is the recordings API's to delete). */
  async delete(account: Account, id: string): Promise<CallSummaryView> {
    const row = await this.row(account, id);
    if (row.status === 'in-progress')
      throw new ApiError('invalid-request-error', `call ${id} is in progress; delete it once it has ended`);
    await this.deps.repo.delete(account.id, id);
    return summaryOf(row, row.transcript_json !== null);
  }

  private async row(account: Account, id: string): Promise<CallRecordRow> {
    const row = await this.deps.repo.get(account.id, id);
    if (!row) throw new ApiError('not-found', `no call with id ${id}`);
    return row;
  }

  /** The record's one write at the end of the call; then the metrics and the status callback. */
  private async complete(
    row: Parameters<CallRecordsRepo['insert']>[0],
    inserted: Promise<boolean>,
    built: BuiltCallRecord,
    services: Record<string, string>,
    options: BeginCallOptions,
    log: Logger,
  ): Promise<void> {
    const summary: StoredSummary = { counts: built.counts, median_response_ms: built.medianResponseMs, services };
    const ended = {
      status: 'ended',
      call_sid: options.kind === 'phone' ? (built.callSid ?? null) : null,
      from_number: built.from ?? row.from_number,
      to_number: built.to ?? row.to_number,
      ended_at: built.endedAt.toISOString(),
      duration_ms: built.durationMs,
      outcome: built.outcome,
      end_reason: built.endReason.slice(0, 500),
      summary_json: JSON.stringify(summary),
      turns_json: JSON.stringify(built.turns),
      transcript_json: built.transcript ? JSON.stringify(built.transcript) : null,
    };
    if (await inserted) await this.deps.repo.complete(row.id, ended);
    else await this.deps.repo.insert({ ...row, ...ended });
    log.info({ callId: row.id, outcome: built.outcome, turns: built.turns.length }, 'call record written');
    if (this.deps.metrics) {
      for (const stage of turnStages(built.turns, services))
        this.deps.metrics.turnStage(stage.stage, stage.vendor, stage.ms);
    }
    const callback = options.config.body.status_callback;
    if (callback) {
      const written = await this.deps.repo.get(row.account_id, row.id);
      if (written) this.deps.statusCallbacks.send(callback, summaryOf(written, written.transcript_json !== null));
    }
  }

  private track(work: Promise<unknown>): void {
    this.pending.add(work);
    void work.finally(() => this.pending.delete(work));
  }
}
