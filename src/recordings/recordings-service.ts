import { randomUUID } from 'node:crypto';
import type { Clock } from '../shared/clock.js';
import { createReadStream, mkdirSync } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { TELEPHONY_SAMPLE_RATE_HZ } from '../audio/frames.js';
import type { BotConfigForCall } from '../bots/bot-config-service.js';
import { ApiError } from '../shared/api-error.js';
import type { UrlSigner } from '../security/url-signer.js';
import type { Account } from '../store/accounts-repo.js';
import { type PageQuery, pageDirection } from '../store/paging.js';
import type { RecordingRow, RecordingsRepo } from '../store/recordings-repo.js';
import type { CallRecordsRepo } from '../store/call-records-repo.js';
import { type BucketStorage, loadBucketSdk, type RecordingsBucket } from './bucket-storage.js';
import { CallRecorder, RECORDING_TRACKS, type RecorderResult, type RecordingTrack } from './call-tracks-recorder.js';
import { PRIVATE_DIR_MODE } from '../shared/private-files.js';
import { WAV_HEADER_BYTES, repairWavFile } from './wav-file-writer.js';

/** The start-bot / telephony configuration field `recording_settings`. */
export interface RecordingSettings {
  type: 'cloud';
  recordings_bucket?: RecordingsBucket;
}

export interface StartRecordingOptions {
  accountId: string;
  /** The room, or for a phone call its configuration id until the carrier's call sid is known. */
  roomName: string;
  settings: RecordingSettings;
  /** Participants including the bot. */
  maxParticipants?: number;
  /** Monotonic clock in ms for the recorder (tests drive it). */
  now?: () => number;
  /** When the conversation began on that clock (see CallRecorderOptions.startedAtMs). */
  startedAtMs?: number;
}

/** One element of a recording's `tracks`: a raw track of one side of the conversation. */
export interface RecordingTrackView {
  /** `caller` (the phone caller or the room's participants) or `bot`. */
  name: RecordingTrack;
  type: 'audio';
  s3Key: string;
  size: number;
  /** Length of the track in ms. */
  duration_ms: number;
}

/** A recording as the API shows it (the hosted service's field names). */
export interface RecordingView {
  id: string;
  room_name: string;
  start_ts: number;
  status: string;
  max_participants: number;
  /** Whole seconds; absent while in progress. */
  duration?: number;
  share_token: string | null;
  s3key: string;
  mtgSessionId: string;
  tracks: RecordingTrackView[] | null;
  /** The call has a transcript (a WebVTT beside the recording, at `vtt_url`). */
  isVttEnabled: boolean;
  /** The call record this recording belongs to, when it has a transcript. */
  call_id?: string;
  /** API path of the call's transcript as WebVTT. */
  vtt_url?: string;
}

export interface AccessLink {
  download_link: string;
  /** Unix seconds. */
  expires: number;
}

export const ACCESS_LINK_TRACKS = RECORDING_TRACKS;

const bytesPerSample = 2;
const msForSamples = (samples: number) => Math.round((samples * 1000) / TELEPHONY_SAMPLE_RATE_HZ);

function view(row: RecordingRow, transcriptCallId?: string): RecordingView {
  return {
    id: row.id,
    room_name: row.room_name,
    start_ts: row.start_ts,
    status: row.status,
    max_participants: row.max_participants,
    ...(row.duration_secs === null ? {} : { duration: row.duration_secs }),
    share_token: null,
    s3key: row.s3_key,
    mtgSessionId: row.mtg_session_id,
    tracks: row.tracks_json === null ? null : (JSON.parse(row.tracks_json) as RecordingTrackView[]),
    isVttEnabled: transcriptCallId !== undefined,
    ...(transcriptCallId === undefined
      ? {}
      : { call_id: transcriptCallId, vtt_url: `/v1/calls/${transcriptCallId}/transcript.vtt` }),
  };
}

/** `<account>/<recording>/<track>.wav`: the object key in a bucket and the path under the recordings dir. */
function trackKey(row: Pick<RecordingRow, 'account_id' | 'id'>, track: RecordingTrack): string {
  return `${row.account_id}/${row.id}/${track}.wav`;
}

export interface RecordingsServiceDeps {
  repo: RecordingsRepo;
  /** Which recordings have a call transcript beside them. */
  callRecords?: CallRecordsRepo;
  /** Files go to `<dataDir>/recordings`. */
  dataDir: string;
  /** The data dir's id (store/data-dir-id.ts): rows are tagged with it, and recovery takes only its own. */
  nodeId: string;
  /** Base of download links. */
  publicUrl: string;
  signer: UrlSigner;
  bucketStorage: BucketStorage;
  log: Logger;
  /** The calls' clock (shared/clock.ts): a recording places the audio by it. Wall time by default. */
  clock?: Clock;
}

/**
 * Owns recordings end to end: starting a recorder for a conversation, its row (in-progress →
 * finished), uploading to a customer's bucket, finalising what a dead process left behind, and
 * the API's list, get, delete and access links.
 */
export class RecordingsService {
  private readonly recordingsDir: string;
  private readonly active = new Set<CallRecorder>();
  /** Row writes and uploads still running; `drain` waits for them. */
  private readonly pending = new Set<Promise<unknown>>();

  constructor(private readonly deps: RecordingsServiceDeps) {
    this.recordingsDir = join(deps.dataDir, 'recordings');
  }

  /** A recorder for a telephony call, when its configuration asks for recording. */
  startForCall(config: BotConfigForCall, log: Logger, startedAtMs?: number): CallRecorder | undefined {
    const settings = config.body.recording_settings;
    if (settings?.type !== 'cloud') return undefined;
    return this.start(
      {
        accountId: config.accountId,
        roomName: config.id,
        settings,
        ...(startedAtMs === undefined ? {} : { startedAtMs }),
      },
      log,
    );
  }

  /**
   * Starts recording a conversation. Returns undefined (and logs) if it cannot: a recording
   * problem never stops a call.
   */
  start(options: StartRecordingOptions, log: Logger = this.deps.log): CallRecorder | undefined {
    const id = randomUUID();
    const ids = { id, account_id: options.accountId };
    const paths = {
      caller: this.localPath(trackKey(ids, 'caller')),
      bot: this.localPath(trackKey(ids, 'bot')),
      mixed: this.localPath(trackKey(ids, 'mixed')),
    };
    try {
      mkdirSync(dirname(paths.mixed), { recursive: true, mode: PRIVATE_DIR_MODE });
    } catch (err) {
      log.error({ err }, 'cannot create the recording directory; the call is not recorded');
      return undefined;
    }
    const bucket = options.settings.recordings_bucket;
    // The upload needs the S3 SDK when the call ends: it loads now, in the background, the first
    // time a call records to a bucket (bucket-storage.ts), instead of in every server at start.
    if (bucket) loadBucketSdk().catch((err: unknown) => log.error({ err }, 'S3 SDK failed to load'));
    // The row exists before anything finishes; later row writes queue behind it.
    let rowWrites: Promise<boolean> = this.deps.repo
      .insert({
        id,
        account_id: options.accountId,
        room_name: options.roomName,
        mtg_session_id: randomUUID(),
        start_ts: Math.floor(Date.now() / 1000),
        status: 'in-progress',
        max_participants: options.maxParticipants ?? 2,
        duration_secs: null,
        tracks_json: null,
        s3_key: trackKey(ids, 'mixed'),
        storage: 'local',
        bucket_json: bucket ? JSON.stringify(bucket) : null,
        created_at: new Date().toISOString(),
        finished_at: null,
        node_id: this.deps.nodeId,
      })
      .then(
        () => true,
        (err: unknown) => {
          log.error({ err, recordingId: id }, 'could not store the recording row');
          return false;
        },
      );
    const recorder = new CallRecorder({
      recordingId: id,
      paths,
      log,
      ...(options.now ? { now: options.now } : this.deps.clock ? { now: () => this.deps.clock!.now() } : {}),
      ...(options.startedAtMs === undefined ? {} : { startedAtMs: options.startedAtMs }),
      onRoomName: (name) => {
        rowWrites = rowWrites.then(async (stored) => {
          if (stored)
            await this.deps.repo
              .update(id, { room_name: name })
              .catch((err: unknown) => log.warn({ err }, 'could not rename the recording'));
          return stored;
        });
      },
      onFinished: async (result) => {
        try {
          if (!(await rowWrites)) return;
          await this.finalise(ids, result, log);
          if (bucket) this.track(this.uploadToBucket(id, log));
        } finally {
          this.active.delete(recorder);
        }
      },
    });
    this.active.add(recorder);
    log.info({ recordingId: id, bucket: bucket?.bucket_name }, 'recording the call');
    return recorder;
  }

  /** Finishes every live recorder and waits for row updates and uploads (shutdown, tests). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.active].map((recorder) => recorder.finish()));
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  /**
   * At start-up: every recording a dead process left `in-progress` gets its files' headers fixed
   * from what reached the disk, its duration computed, and is marked finished (or canceled when
   * no audio was written at all). Returns how many were recovered.
   */
  async recoverInterrupted(): Promise<number> {
    const rows = await this.deps.repo.listInProgress(this.deps.nodeId);
    for (const row of rows) {
      const samplesByTrack = { caller: 0, bot: 0, mixed: 0 };
      let anyFile = false;
      for (const track of RECORDING_TRACKS) {
        try {
          samplesByTrack[track] = await repairWavFile(this.localPath(trackKey(row, track)), TELEPHONY_SAMPLE_RATE_HZ);
          anyFile = true;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
            this.deps.log.warn({ err, recordingId: row.id, track }, 'could not repair a recording file');
        }
      }
      if (!anyFile) {
        await this.deps.repo.update(row.id, {
          status: 'canceled',
          duration_secs: 0,
          finished_at: new Date().toISOString(),
        });
        continue;
      }
      await this.finalise(row, { samplesByTrack }, this.deps.log);
      this.deps.log.info(
        { recordingId: row.id, durationMs: msForSamples(samplesByTrack.mixed) },
        'recovered an interrupted recording',
      );
      if (row.bucket_json) this.track(this.uploadToBucket(row.id, this.deps.log));
    }
    return rows.length;
  }

  /**
   * The node whose data dir holds a recording's files, when it is another node (a recording kept
   * locally, not in a bucket): downloads and deletion are that node's to serve.
   */
  async filesNodeOf(id: string): Promise<string | undefined> {
    const row = await this.deps.repo.getById(id);
    if (row?.storage !== 'local' || !row.node_id || row.node_id === this.deps.nodeId) return undefined;
    return row.node_id;
  }

  /** A node died mid-call: its recordings in progress are closed (see RecordingsRepo.abandonNode). */
  async abandonNode(nodeId: string): Promise<void> {
    const closed = await this.deps.repo.abandonNode(nodeId);
    if (closed > 0)
      this.deps.log.warn(
        { deadNode: nodeId, recordings: closed },
        'closed the recordings a dead node left in progress; it repairs their files when it starts again',
      );
  }

  async list(
    account: Account,
    page: PageQuery,
    filters: { roomName?: string },
  ): Promise<{ total_count: number; data: RecordingView[] }> {
    const direction = await pageDirection(page, (id) => this.deps.repo.seqOf(account.id, id), 'recording');
    const [rows, total] = await Promise.all([
      this.deps.repo.list(account.id, direction, page.limit, filters),
      this.deps.repo.count(account.id, filters),
    ]);
    const transcripts = await this.transcriptsOf(
      account,
      rows.map((r) => r.id),
    );
    return { total_count: total, data: rows.map((row) => view(row, transcripts.get(row.id))) };
  }

  async get(account: Account, id: string): Promise<RecordingView> {
    const row = await this.row(account, id);
    return view(row, (await this.transcriptsOf(account, [id])).get(id));
  }

  private async transcriptsOf(account: Account, ids: string[]): Promise<Map<string, string>> {
    return (await this.deps.callRecords?.transcriptsOfRecordings(account.id, ids)) ?? new Map();
  }

  /** Removes the row and the files, local and in the bucket. */
  async delete(account: Account, id: string): Promise<RecordingView> {
    const row = await this.row(account, id);
    if (row.status === 'in-progress')
      throw new ApiError('invalid-request-error', `recording ${id} is in progress; delete it once it has finished`);
    if (row.storage === 'bucket' && row.bucket_json) {
      const bucket = JSON.parse(row.bucket_json) as RecordingsBucket;
      for (const track of RECORDING_TRACKS) {
        try {
          await this.deps.bucketStorage.delete(bucket, trackKey(row, track));
        } catch (err) {
          this.deps.log.warn(
            { err, recordingId: id, bucket: bucket.bucket_name },
            'could not delete a recording object from the bucket',
          );
          throw new ApiError(
            'server-error',
            `the bucket ${bucket.bucket_name} refused to delete the recording; try again`,
          );
        }
      }
    }
    await rm(dirname(this.localPath(trackKey(row, 'mixed'))), { recursive: true, force: true });
    await this.deps.repo.delete(account.id, id);
    return view(row);
  }

  /** An expiring link to one of the recording's files (the mixed one unless `track` says). */
  async accessLink(account: Account, id: string, validForSecs: number, track: RecordingTrack): Promise<AccessLink> {
    const row = await this.row(account, id);
    if (row.status === 'in-progress')
      throw new ApiError('invalid-request-error', `recording ${id} is still in progress`);
    if (row.status !== 'finished')
      throw new ApiError('invalid-request-error', `recording ${id} is ${row.status} and has no audio`);
    const expires = Math.floor(Date.now() / 1000) + validForSecs;
    const bucket = row.bucket_json ? (JSON.parse(row.bucket_json) as RecordingsBucket) : undefined;
    if (bucket && bucket.allow_api_access === false) {
      throw new ApiError(
        'forbidden-error',
        `recording ${id} is in the bucket ${bucket.bucket_name}, whose allow_api_access is false`,
      );
    }
    if (row.storage === 'bucket' && bucket?.allow_streaming_from_bucket) {
      try {
        return {
          download_link: await this.deps.bucketStorage.presignedUrl(bucket, trackKey(row, track), validForSecs),
          expires,
        };
      } catch (err) {
        this.deps.log.warn({ err, recordingId: id }, 'could not presign a bucket URL');
        throw new ApiError('server-error', `could not sign a link to the bucket ${bucket.bucket_name}`);
      }
    }
    const signature = this.deps.signer.sign(downloadPayload(id, track, expires));
    const query = new URLSearchParams({ expires: String(expires), signature });
    return { download_link: `${this.deps.publicUrl}/recording-downloads/${id}/${track}.wav?${query}`, expires };
  }

  /** Serves a signed download link: checks the signature and the expiry, then opens the file. */
  async openDownload(request: {
    id: string;
    track: RecordingTrack;
    expires: number;
    signature: string;
  }): Promise<{ body: Readable; sizeBytes?: number; filename: string }> {
    const { id, track, expires, signature } = request;
    if (!this.deps.signer.verify(downloadPayload(id, track, expires), signature)) {
      throw new ApiError('forbidden-error', 'the download link is not valid');
    }
    if (expires * 1000 < Date.now())
      throw new ApiError('forbidden-error', 'the download link has expired; ask for a new one');
    const row = await this.deps.repo.getById(id);
    if (row?.status !== 'finished') throw new ApiError('not-found', `no recording with id ${id}`);
    const filename = `${id}-${track}.wav`;
    if (row.storage === 'bucket' && row.bucket_json) {
      const bucket = JSON.parse(row.bucket_json) as RecordingsBucket;
      try {
        const object = await this.deps.bucketStorage.download(bucket, trackKey(row, track));
        return { ...object, filename };
      } catch (err) {
        this.deps.log.warn({ err, recordingId: id }, 'could not read the recording from its bucket');
        throw new ApiError('server-error', `could not read the recording from the bucket ${bucket.bucket_name}`);
      }
    }
    const path = this.localPath(trackKey(row, track));
    const size = await stat(path).then(
      (s) => s.size,
      () => undefined,
    );
    if (size === undefined) throw new ApiError('not-found', `the ${track} file of recording ${id} is missing`);
    return { body: createReadStream(path), sizeBytes: size, filename };
  }

  private async row(account: Account, id: string): Promise<RecordingRow> {
    const row = await this.deps.repo.get(account.id, id);
    if (!row) throw new ApiError('not-found', `no recording with id ${id}`);
    return row;
  }

  private localPath(key: string): string {
    return join(this.recordingsDir, key);
  }

  /** Marks the row finished with its duration and tracks. */
  private async finalise(
    row: Pick<RecordingRow, 'account_id' | 'id'>,
    result: RecorderResult,
    log: Logger,
  ): Promise<void> {
    const { samplesByTrack } = result;
    const tracks: RecordingTrackView[] = (['caller', 'bot'] as const).map((name) => ({
      name,
      type: 'audio',
      s3Key: trackKey(row, name),
      size: WAV_HEADER_BYTES + samplesByTrack[name] * bytesPerSample,
      duration_ms: msForSamples(samplesByTrack[name]),
    }));
    const durationSamples = Math.max(samplesByTrack.caller, samplesByTrack.bot, samplesByTrack.mixed);
    await this.deps.repo.update(row.id, {
      status: 'finished',
      duration_secs: Math.round(durationSamples / TELEPHONY_SAMPLE_RATE_HZ),
      tracks_json: JSON.stringify(tracks),
      finished_at: new Date().toISOString(),
    });
    log.info({ recordingId: row.id, durationMs: msForSamples(durationSamples) }, 'recording finished');
  }

  /** After the call: every file to the bucket, then the local copies go. On failure they stay local. */
  private async uploadToBucket(id: string, log: Logger): Promise<void> {
    const row = await this.deps.repo.getById(id);
    if (!row?.bucket_json) return;
    const bucket = JSON.parse(row.bucket_json) as RecordingsBucket;
    try {
      for (const track of RECORDING_TRACKS) {
        const path = this.localPath(trackKey(row, track));
        const { size } = await stat(path);
        await this.deps.bucketStorage.upload(bucket, trackKey(row, track), path, size);
      }
    } catch (err) {
      log.error(
        { err, recordingId: id, bucket: bucket.bucket_name },
        'recording upload failed; the files stay in the data dir',
      );
      return;
    }
    await this.deps.repo.update(id, { storage: 'bucket' });
    await rm(dirname(this.localPath(trackKey(row, 'mixed'))), { recursive: true, force: true });
    log.info({ recordingId: id, bucket: bucket.bucket_name }, 'recording uploaded');
  }

  private track(work: Promise<unknown>): void {
    const guarded = work.catch((err: unknown) => this.deps.log.error({ err }, 'recording work failed'));
    this.pending.add(guarded);
    void guarded.finally(() => this.pending.delete(guarded));
  }
}

function downloadPayload(id: string, track: RecordingTrack, expires: number): string {
  return `recording-download\n${id}\n${track}\n${expires}`;
}
