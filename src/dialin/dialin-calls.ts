import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Coordinator } from '../cluster/coordinator.js';
import { ApiError } from '../shared/api-error.js';
import type { AttachableTransport } from '../dialout/dialout-service.js';
import { type LiveCalls, SHUTDOWN_REASON } from '../lifecycle/live-calls.js';
import type { CallStart, CallTransport, CallTransportHandler } from '../pipeline/call-transport.js';
import { speakFixedPhrase } from '../pipeline/fixed-phrase.js';
import { Playout, type PlayoutClock } from '../pipeline/playout.js';
import type { TtsProvider } from '../providers/types.js';
import type { AddressPolicy } from '../security/address-policy.js';
import type { Account } from '../store/accounts-repo.js';
import { deliverDialinWebhook } from './dialin-webhook.js';
import { holdChime } from './hold-audio.js';
import type { HoldMusic } from './hold-music.js';
import type { PinlessEntry } from './pinless-config.js';
import { CLOSE } from '../shared/close-codes.js';

export const DEFAULT_NO_BOT_MESSAGE = 'Sorry, no one is available to take your call right now. Please try again later.';

/** A dial-in call from the moment the carrier asks for TwiML until a bot takes it or it ends. */
interface WaitingCall {
  callId: string;
  callDomain: string;
  accountId: string;
  from: string;
  to: string;
  entry: PinlessEntry;
  transport?: AttachableTransport;
  holder?: HoldingLeg;
  /** A bot took the call before the carrier connected its audio: where the audio goes when it does. */
  claimant?: { join: JoinLeg; lost: (reason: string) => void };
  /**
   * waiting: for a bot (with or without audio yet); claimed: a bot took it, its audio has not
   * connected yet; connected: the bot has the caller's leg; ended: gone.
   */
  state: 'waiting' | 'claimed' | 'connected' | 'ended';
  /** The hold timeout: bounds the wait for a bot, and for the audio of a claimed call. */
  timer: NodeJS.Timeout;
  /** Tells the server's live calls this one is over (or now belongs to a room). */
  release: () => void;
}

/** Takes the caller's leg: returns the handler that is given its audio from now on. */
export type JoinLeg = (transport: CallTransport) => CallTransportHandler;

export interface DialinCallsOptions {
  playoutClock: PlayoutClock;
  fallbackTts: () => TtsProvider;
  policy: AddressPolicy;
  holdTimeoutMs: number;
  /** Entries' hold_music_url, fetched and decoded; the chime plays until (and unless) it is ready. */
  holdMusic: HoldMusic;
  /** Callers on hold count as live calls: a shutdown lets them wait, then says the no-bot message. */
  liveCalls: LiveCalls;
  /**
   * Each call is held for this node from the webhook until it ends, so the customer's
   * POST /v1/bots/start and the carrier's media stream reach it whichever node they land on.
   */
  cluster: Coordinator;
  log: Logger;
}

/** What POST /v1/bots/start gets when its dialin_settings name a waiting call. */
export interface ClaimedCall {
  callId: string;
  from: string;
  to: string;
  namePrefix: string | undefined;
  /**
   * Hands the caller's leg to the bot: at once when its audio is connected (the hold music stops),
   * otherwise when the carrier connects it. A carrier connects the media stream some time after it
   * fetched the TwiML, often after the webhook was answered; the hold timeout bounds the wait, and
   * `lost` is told when the audio never came.
   */
  connect(join: JoinLeg, lost: (reason: string) => void): void;
  /** The bot's room closed first: the call is let go (audio that arrives later is turned away). */
  release(): void;
}

/**
 * Pinless dial-in calls in flight. An incoming call gets a callId, its media stream plays a hold
 * chime, the customer's room_creation_api is told (signed, retried), and the call waits for
 * POST /v1/bots/start to claim it with dialin_settings, which may come before the carrier has
 * connected the call's audio (the webhook leaves when the TwiML is fetched); the bot then takes the
 * leg when it connects. Without a bot by the hold timeout the caller hears a polite message and the
 * call ends; a claimed call whose audio has not come by then is let go, and its room told.
 * Every call, re-dials too, is a new callId.
 */
export class DialinCalls {
  private readonly calls = new Map<string, WaitingCall>();

  constructor(private readonly options: DialinCallsOptions) {}

  /**
   * The carrier's webhook: a call to a configured number has arrived. The call is known to the
   * whole cluster before the customer's server hears of it.
   */
  async open(accountId: string, callDomain: string, entry: PinlessEntry, from: string, to: string): Promise<string> {
    const callId = randomUUID();
    await this.options.cluster.claim('dialin', callId);
    const call: WaitingCall = {
      callId,
      callDomain,
      accountId,
      from,
      to,
      entry,
      state: 'waiting',
      // Wall time: the caller waits for a customer's server to start a bot, which runs on real time.
      timer: setTimeout(() => this.giveUp(call), this.options.holdTimeoutMs),
      release: () => undefined,
    };
    call.release = this.options.liveCalls.add({
      endWithGoodbye: () => this.giveUp(call, 1001),
      endNow: () => (call.transport ? call.transport.close(CLOSE.goingAway, SHUTDOWN_REASON) : this.end(call)),
    });
    this.calls.set(callId, call);
    const log = this.options.log.child({ callId, to });
    log.info('dial-in call waiting for a bot');
    // Start fetching the music now, so it is likely ready when the media stream connects.
    if (entry.hold_music_url) this.options.holdMusic.get(entry.hold_music_url);
    const deadlineMs = performance.now() + this.options.holdTimeoutMs;
    void deliverDialinWebhook({
      url: entry.room_creation_api,
      secretBase64: entry.hmac,
      body: { From: from, To: to, callId, callDomain },
      deadlineMs,
      policy: this.options.policy,
      log,
      stillWaiting: () => call.state === 'waiting',
    });
    return callId;
  }

  /**
   * The carrier's media stream for a call: to the bot that has claimed it already, or the hold
   * music until a bot does.
   */
  connect(callId: string, transport: AttachableTransport): boolean {
    const call = this.calls.get(callId);
    if (!call || call.transport || (call.state !== 'waiting' && call.state !== 'claimed')) return false;
    call.transport = transport;
    if (call.state === 'claimed') {
      call.state = 'connected';
      clearTimeout(call.timer);
      this.options.log.info({ callId }, 'dial-in caller’s audio connected; the bot takes the call');
      this.handOver(call, transport, call.claimant!.join);
      return true;
    }
    const musicUrl = call.entry.hold_music_url;
    const music = musicUrl ? () => this.options.holdMusic.get(musicUrl) : () => undefined;
    call.holder = new HoldingLeg(transport, this.options.playoutClock, () => this.end(call), music);
    transport.attach(call.holder);
    return true;
  }

  /** POST /v1/bots/start with dialin_settings: the waiting call is the bot's, audio or not yet. */
  claim(account: Account, callId: string, callDomain: string | undefined): ClaimedCall {
    const call = this.calls.get(callId);
    if (!call || call.accountId !== account.id)
      throw new ApiError('not-found', `dialin_settings: no dial-in call ${callId} is waiting`);
    if (callDomain !== undefined && callDomain !== call.callDomain)
      throw new ApiError('invalid-request-error', 'dialin_settings: callDomain does not match the call');
    if (call.state !== 'waiting')
      throw new ApiError('invalid-request-error', `dialin_settings: call ${callId} is no longer waiting`);
    // Without audio yet, the call is the bot's from now on; the hold timer keeps running and bounds
    // the wait for the carrier's media stream.
    call.state = 'claimed';
    // The bot's room is a live call of its own from here on (a drain ends it with a goodbye).
    call.release();
    return {
      callId,
      from: call.from,
      to: call.to,
      namePrefix: call.entry.name_prefix,
      connect: (join, lost) => {
        if (call.state !== 'claimed') return lost(`call ${callId} has ended`);
        if (call.transport) {
          call.state = 'connected';
          clearTimeout(call.timer);
          this.handOver(call, call.transport, join);
        } else {
          call.claimant = { join, lost };
        }
      },
      release: () => {
        if (call.state !== 'claimed') return;
        this.options.log.info({ callId }, 'the bot’s room closed before the dial-in caller’s audio connected');
        this.forget(call);
        call.transport?.close(CLOSE.normal, 'room closed');
      },
    };
  }

  /** Whether this node has the call (waiting, claimed, or connected to its bot). */
  holds(callId: string): boolean {
    return this.calls.has(callId);
  }

  /** Calls still waiting (for logs and tests). */
  get waiting(): number {
    let n = 0;
    for (const call of this.calls.values()) if (call.state === 'waiting') n += 1;
    return n;
  }

  /** The caller's leg goes to the bot's handler; the call is forgotten when that leg ends. */
  private handOver(call: WaitingCall, transport: AttachableTransport, join: JoinLeg): void {
    const handler = join(transport);
    const onEnd = handler.onEnd.bind(handler);
    handler.onEnd = (reason) => {
      this.drop(call);
      onEnd(reason);
    };
    if (call.holder) call.holder.handOver(handler);
    else transport.attach(handler);
  }

  private drop(call: WaitingCall): void {
    if (this.calls.get(call.callId) !== call) return;
    this.calls.delete(call.callId);
    this.options.cluster.release('dialin', call.callId);
  }

  /**
   * No bot came in time (the hold timeout, or the server's drain limit): the caller hears the
   * entry's message, then the stream closes with `closeCode`.
   */
  private giveUp(call: WaitingCall, closeCode = 1000): void {
    if (call.state !== 'waiting' && call.state !== 'claimed') return;
    const lost = call.state === 'claimed' ? call.claimant?.lost : undefined;
    if (call.state === 'claimed') {
      this.options.log.warn(
        { callId: call.callId, to: call.to },
        'the dial-in caller’s audio did not connect in time; the bot that took the call is let go',
      );
    } else {
      this.options.log.warn({ callId: call.callId, to: call.to }, 'no bot took the dial-in call in time');
    }
    this.forget(call);
    const message = call.entry.timeout_config?.message ?? DEFAULT_NO_BOT_MESSAGE;
    if (call.holder) call.holder.sayAndHangUp(message, this.options.fallbackTts(), this.options.log, closeCode);
    lost?.('the dial-in caller’s audio never connected');
  }

  private end(call: WaitingCall): void {
    if (call.state === 'waiting')
      this.options.log.info({ callId: call.callId }, 'dial-in caller hung up while waiting');
    this.forget(call);
    call.release();
  }

  private forget(call: WaitingCall): void {
    call.state = 'ended';
    clearTimeout(call.timer);
    this.drop(call);
    // A caller still on hold stays live until the no-bot message has played and the leg ends.
    if (!call.holder) call.release();
  }
}

/** The caller's leg while on hold: loops the music (or chime), and hands the leg over when a bot arrives. */
class HoldingLeg implements CallTransportHandler {
  private readonly playout: Playout;
  private readonly chime = holdChime();
  private generation = 0;
  private next: CallTransportHandler | undefined;
  private started: CallStart | undefined;
  /** The no-bot message is playing: when it has played, hang up instead of looping. */
  private ending = false;
  private closeCode = 1000;

  constructor(
    private readonly transport: AttachableTransport,
    private readonly clock: PlayoutClock,
    private readonly onHangUp: () => void,
    /** The customer's hold music once loaded; each loop picks it up if it has arrived meanwhile. */
    private readonly music: () => Uint8Array | undefined,
  ) {
    // The chime is one long reply: when it has played, it starts again.
    this.playout = new Playout(transport, { onReplyPlayed: () => this.loop() }, { now: () => clock.clock.now() });
  }

  onStart(start: CallStart): void {
    this.started = start;
    this.clock.add(this.playout);
    this.loop();
  }

  onAudio(): void {}

  onDtmf(): void {}

  onMark(name: string): void {
    this.playout.onMarkEchoed(name);
  }

  onEnd(reason: string): void {
    this.clock.delete(this.playout);
    if (this.next) this.next.onEnd(reason);
    else this.onHangUp();
  }

  handOver(handler: CallTransportHandler): void {
    this.playout.clear();
    this.clock.delete(this.playout);
    this.next = handler;
    this.transport.attach(handler);
    if (this.started) handler.onStart(this.started);
  }

  /** No bot came: stop the chime, say the message with the offline voice, then end the call. */
  sayAndHangUp(message: string, tts: TtsProvider, log: Logger, closeCode = 1000): void {
    this.ending = true;
    this.closeCode = closeCode;
    this.playout.clear();
    this.generation = this.playout.startReply();
    speakFixedPhrase(this.playout, this.generation, tts, message, new AbortController().signal, log).catch(
      (err: unknown) => {
        log.error({ err }, 'could not say the no-bot message');
        this.transport.close(this.closeCode, 'no bot');
      },
    );
  }

  private loop(): void {
    if (this.ending) {
      this.transport.close(this.closeCode, 'no bot');
      return;
    }
    if (this.next) return;
    this.generation = this.playout.startReply();
    this.playout.enqueue(this.generation, this.music() ?? this.chime);
    this.playout.endReply(this.generation);
  }
}
