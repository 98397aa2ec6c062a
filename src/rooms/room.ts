import type { Logger } from 'pino';
import type { Clock, ClockTimer } from '../shared/clock.js';
import type { BotConfigForCall } from '../bots/bot-config-service.js';
import type { ClaimedCall } from '../dialin/dialin-calls.js';
import type { AttachableTransport, DialoutRoom } from '../dialout/dialout-service.js';
import { SHUTDOWN_REASON } from '../lifecycle/live-calls.js';
import { type BotOnCall, startBot } from '../lifecycle/start-bot.js';
import { type CallEvents, type CallSessionDeps, PHRASES } from '../pipeline/call-deps.js';
import type { RecordingsService } from '../recordings/recordings-service.js';
import type { CallRecordsService } from '../records/call-records-service.js';
import type { TurnPolicy } from '../pipeline/turn-controller.js';
import { BrowserParticipant } from './browser-participant.js';
import { PhoneLeg } from './phone-leg.js';
import type { ParticipantEvents, RoomParticipant } from './room-participant.js';
import { RoomClientTools } from './room-client-tools.js';
import { CLOSE } from '../shared/close-codes.js';
import { RTVI_PROTOCOL_VERSION, serverMessage } from './room-messages.js';
import { type RoomInput, RoomTransport } from './room-transport.js';

export interface RoomLimits {
  maxParticipants: number;
  /** A room nobody has joined closes after this long, ms. */
  joinTimeoutMs: number;
  /** After the last participant leaves, the room waits this long for someone to (re)join, ms. */
  emptyGraceMs: number;
  /** A room where nobody speaks (user or bot) for this long closes, ms. */
  idleTimeoutMs: number;
}

export interface RoomOptions {
  name: string;
  config: BotConfigForCall;
  /**
   * When max_duration is reached, on the calls' clock (`session.clock`). A room whose bot has started leaves the goodbye to its session; one
   * nobody ever joined (a dial-out still ringing) has no one to say it to, and closes then.
   */
  maxDurationAtMs: number;
  /** When the room is closed whatever happens (max_duration plus the goodbye), on the same clock. */
  hardStopAtMs: number;
  limits: RoomLimits;
  session: Omit<CallSessionDeps, 'log' | 'events' | 'latestImage' | 'turnPolicy'>;
  recordings?: RecordingsService;
  records?: CallRecordsService;
  turnPolicy?: TurnPolicy;
  /** Vision profiles: camera frames are asked for and given to the LLM. */
  vision: boolean;
  log: Logger;
  onClosed(room: Room, reason: string): void;
}

type Member = RoomParticipant | PhoneLeg;

/** Why a participant could not join. */
export type JoinRefusal = { why: 'closed' | 'full'; message: string };

/**
 * A meeting point of transports: the bot (a CallSession on a RoomTransport), browser
 * participants and phone legs. Everyone hears the bot; the bot hears everyone, mixed. The bot
 * starts when the first participant is ready, so its greeting is heard. The room closes at
 * max_duration (the session says goodbye first), when everyone has left, when nobody has joined
 * or spoken for too long, or when the server shuts down.
 */
export class Room implements DialoutRoom {
  readonly name: string;
  readonly accountId: string;
  private readonly transport: RoomTransport;
  /** The bot's session (with the recorder's tap when the room is recorded), as on a phone call. */
  private readonly bot: BotOnCall;
  private readonly members = new Map<Member, RoomInput | undefined>();
  private readonly log: Logger;
  private latestImage: string | undefined;
  private started = false;
  private closed = false;
  /** The server is shutting down: nobody new can join, so an empty room has no one left to wait for. */
  private draining = false;
  private botSpeaking = false;
  private userSpeaking = false;
  private joinTimer: NodeJS.Timeout | undefined;
  private emptyTimer: NodeJS.Timeout | undefined;
  private idleTimer: ClockTimer | undefined;
  private readonly maxDurationTimer: ClockTimer;
  private readonly hardStopTimer: ClockTimer;
  /** The calls' clock (shared/clock.ts): the room's audio, max_duration and idle time run on it. */
  private readonly clock: Clock;
  /** Dial-out legs still ringing: while any is, the room waits for them rather than for a browser. */
  private ringingDialouts = 0;
  private readonly closeListeners: Array<() => void> = [];
  /** Functions the bot asks of the room's client (neither webhooks nor built in). */
  private readonly clientTools: RoomClientTools;

  constructor(private readonly options: RoomOptions) {
    this.name = options.name;
    this.accountId = options.config.accountId;
    this.log = options.log.child({ room: options.name });
    this.clock = options.session.clock;
    const clock = this.clock;
    this.transport = new RoomTransport(
      (code, reason) => this.close(reason, code),
      () => clock.now(),
      clock,
    );
    this.clientTools = new RoomClientTools(() => this.functionCallClient(), this.log);
    // A recorded room: the mix of participants is the caller track, the bot's frames the bot track.
    const settings = options.config.body.recording_settings;
    const recorder =
      settings?.type === 'cloud'
        ? options.recordings?.start(
            {
              accountId: options.config.accountId,
              roomName: options.name,
              settings,
              maxParticipants: options.limits.maxParticipants + 1,
            },
            this.log,
          )
        : undefined;
    this.bot = startBot(
      this.transport,
      options.config,
      {
        ...options.session,
        log: this.log,
        events: this.callEvents(),
        turnPolicy: options.turnPolicy,
        latestImage: options.vision ? () => this.latestImage : undefined,
        clientTools: this.clientTools,
      },
      recorder,
      options.records?.begin({
        kind: 'room',
        config: options.config,
        roomName: options.name,
        recordingId: recorder?.recordingId,
        log: this.log,
      }),
    );
    // Joining and leaving are wall time (a browser loading, a network reconnecting); the call's
    // own limits (max_duration, idle) are the call's clock, as the session's are.
    this.joinTimer = setTimeout(() => this.close('nobody joined'), options.limits.joinTimeoutMs);
    this.maxDurationTimer = clock.setTimeout(
      () => {
        if (!this.started) this.close('max_duration');
      },
      Math.max(0, options.maxDurationAtMs - clock.now()),
    );
    this.hardStopTimer = clock.setTimeout(
      () => this.close('max_duration'),
      Math.max(0, options.hardStopAtMs - clock.now()),
    );
    this.log.info({ profile: options.config.body.bot_profile }, 'room opened');
  }

  get isClosed(): boolean {
    return this.closed;
  }

  get participantCount(): number {
    return this.members.size;
  }

  /** Takes a browser socket whose token was checked. False (and the socket closed) when full. */
  admit(socket: ConstructorParameters<typeof BrowserParticipant>[0], log: Logger): boolean {
    const refusal = this.refusal();
    if (refusal) {
      socket.close(refusal.why === 'closed' ? CLOSE.notFound : CLOSE.roomFull, refusal.message);
      return false;
    }
    this.addParticipant(new BrowserParticipant(socket, log, this.participantEvents(), undefined, this.clock));
    return true;
  }

  /**
   * Takes a participant of another transport (a WebRTC peer), built by `create` with the room's
   * events once the room has a place for it; the refusal otherwise.
   */
  /** The bot's profile sees: a participant's camera pictures are wanted (the latest goes with each user turn). */
  get seesCamera(): boolean {
    return this.options.vision;
  }

  admitParticipant<P extends RoomParticipant>(create: (events: ParticipantEvents) => P): P | JoinRefusal {
    const refusal = this.refusal();
    if (refusal) return refusal;
    const participant = create(this.participantEvents());
    this.addParticipant(participant);
    return participant;
  }

  private refusal(): JoinRefusal | undefined {
    if (this.closed) return { why: 'closed', message: 'room has closed' };
    if (this.members.size >= this.options.limits.maxParticipants)
      return { why: 'full', message: `room is full (${this.options.limits.maxParticipants} participants)` };
    return undefined;
  }

  private participantEvents(): ParticipantEvents {
    return {
      onReady: (p) => this.onParticipantReady(p),
      onImage: (image) => {
        if (this.options.vision) this.latestImage = image;
      },
      onGone: (p, reason) => {
        this.clientTools.clientGone(p);
        this.leave(p, reason);
      },
      onDisconnectBot: () => this.close('disconnect-bot'),
      onFunctionCallResult: (p, message) => this.clientTools.onResult(p, message),
    };
  }

  private addParticipant(participant: RoomParticipant): void {
    this.members.set(participant, undefined);
    this.clearEmptyTimer();
  }

  /**
   * A dial-in caller joins when its audio stream starts: at once when it is on hold (the hold
   * music stops), or when the carrier connects it, which may be after the bot was started. If the
   * audio never comes within the hold timeout, a room nobody else has joined closes.
   */
  addPhoneCall(call: ClaimedCall): void {
    this.onClose(() => call.release());
    call.connect(
      (transport) => {
        const leg = new PhoneLeg(
          transport,
          (digit) => this.bot.handler.onDtmf(digit),
          (l, reason) => this.leave(l, reason),
          (l) => {
            if (!this.closed && this.members.has(l)) this.join(l);
          },
        );
        this.members.set(leg, undefined);
        this.clearEmptyTimer();
        this.log.info({ callId: call.callId }, 'phone caller joined the room');
        return leg;
      },
      (reason) => {
        this.log.warn({ callId: call.callId, reason }, 'the dial-in caller never joined the room');
        if (!this.closed && this.members.size === 0 && this.ringingDialouts === 0) this.close(reason);
      },
    );
  }

  expectDialouts(count: number): void {
    this.ringingDialouts += count;
    clearTimeout(this.joinTimer);
    this.joinTimer = undefined;
  }

  /** A callee answered: the leg joins when its stream starts, so the bot's greeting is heard. */
  addCallee(transport: AttachableTransport, to: string): void {
    this.ringingDialouts = Math.max(0, this.ringingDialouts - 1);
    this.addPhoneLeg(transport, to);
  }

  /**
   * A carrier media stream joins the room once it starts: a callee, or the caller of a telephony
   * bot that dials out, whose call the room is (`endsRoom`: when they hang up, everyone's call ends).
   */
  addPhoneLeg(transport: AttachableTransport, who: string, endsRoom = false): void {
    if (this.closed || this.members.size >= this.options.limits.maxParticipants) {
      transport.close(CLOSE.normal, this.closed ? 'room has closed' : 'room is full');
      return;
    }
    const leg = new PhoneLeg(
      transport,
      (digit) => this.bot.handler.onDtmf(digit),
      (l, reason) => {
        this.leave(l, reason);
        if (endsRoom) this.close(`${who} hung up`);
      },
      (l) => {
        if (!this.closed && this.members.has(l)) this.join(l);
      },
    );
    this.members.set(leg, undefined);
    this.clearEmptyTimer();
    transport.attach(leg);
    this.log.info({ who }, 'phone leg connected');
  }

  /** A dial-out leg ended unanswered; with nobody else ever here, the room has no one to serve. */
  dialoutEnded(to: string, outcome: string): void {
    this.ringingDialouts = Math.max(0, this.ringingDialouts - 1);
    this.log.info({ to, outcome, stillRinging: this.ringingDialouts }, 'dial-out leg ended without joining');
    if (this.closed || this.ringingDialouts > 0) return;
    if (this.members.size > 0) {
      if (!this.started)
        this.joinTimer ??= setTimeout(() => this.close('nobody joined'), this.options.limits.joinTimeoutMs);
    } else if (!this.started) {
      this.close('no dial-out target answered');
    } else {
      this.armEmptyTimer();
    }
  }

  onClose(listener: () => void): void {
    this.closeListeners.push(listener);
  }

  /** The server began draining: an empty room closes now; one in use goes on. */
  drain(): void {
    this.draining = true;
    if (this.members.size === 0 && this.ringingDialouts === 0) this.close(SHUTDOWN_REASON, CLOSE.goingAway);
  }

  /** The drain limit: the bot says goodbye (as at max_duration), then everyone is closed with 1001. */
  endWithGoodbye(): void {
    if (this.closed) return;
    if (!this.started) this.close(SHUTDOWN_REASON, CLOSE.goingAway);
    else this.bot.endWithGoodbye(SHUTDOWN_REASON, CLOSE.goingAway, PHRASES.shutdown);
  }

  /** Ends the room for everyone, their sockets closed with `code`; the session is told once. */
  close(reason: string, code: number = CLOSE.normal): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.joinTimer);
    clearTimeout(this.emptyTimer);
    this.clock.clearTimeout(this.idleTimer);
    this.clock.clearTimeout(this.maxDurationTimer);
    this.clock.clearTimeout(this.hardStopTimer);
    this.transport.end(reason);
    for (const member of [...this.members.keys()]) {
      if (member instanceof PhoneLeg) member.transport.close(code, `room closed: ${reason}`);
      else member.close(code, `room closed: ${reason}`);
    }
    this.members.clear();
    for (const listener of this.closeListeners.splice(0)) listener();
    this.log.info({ reason }, 'room closed');
    this.options.onClosed(this, reason);
  }

  private onParticipantReady(participant: RoomParticipant): void {
    if (this.closed) return;
    participant.send(
      serverMessage('bot-ready', {
        version: RTVI_PROTOCOL_VERSION,
        room: this.name,
        profile: this.options.config.body.bot_profile,
        enableCam: this.options.vision,
      }),
    );
    // Late joiners see where the conversation stands.
    if (this.botSpeaking) participant.send(serverMessage('bot-started-speaking'));
    this.join(participant);
  }

  private join(member: Member): void {
    const input = this.transport.addMember(member);
    member.connectInput(input);
    this.members.set(member, input);
    clearTimeout(this.joinTimer);
    this.joinTimer = undefined;
    this.touch();
    if (!this.started) {
      this.started = true;
      this.transport.attach(this.bot.handler);
      // The room's name stands in for a call sid (logs, and the recording's room_name).
      this.bot.handler.onStart({ callSid: this.name, streamSid: this.name });
    }
  }

  private leave(member: Member, reason: string): void {
    if (!this.members.has(member)) return;
    const input = this.members.get(member);
    this.members.delete(member);
    if (input) this.transport.removeMember(input);
    this.log.info({ reason, participants: this.members.size }, 'participant left');
    // Someone may still answer a ringing dial-out; dialoutEnded arms the timer if nobody does.
    if (this.closed || this.members.size > 0 || this.ringingDialouts > 0) return;
    this.armEmptyTimer();
  }

  private armEmptyTimer(): void {
    this.clearEmptyTimer();
    // While draining nobody can (re)join: waiting would only hold up the shutdown.
    if (this.draining) this.close(SHUTDOWN_REASON, CLOSE.goingAway);
    else this.emptyTimer = setTimeout(() => this.close('everyone left'), this.options.limits.emptyGraceMs);
  }

  private clearEmptyTimer(): void {
    clearTimeout(this.emptyTimer);
    this.emptyTimer = undefined;
  }

  /** Something was said: the idle clock starts again. */
  private touch(): void {
    this.clock.clearTimeout(this.idleTimer);
    this.idleTimer = this.clock.setTimeout(() => this.close('idle'), this.options.limits.idleTimeoutMs);
  }

  /** The participant asked for function results: the earliest to join of the ready browsers. */
  private functionCallClient(): RoomParticipant | undefined {
    for (const member of this.members.keys()) if (!(member instanceof PhoneLeg) && member.ready) return member;
    return undefined;
  }

  private broadcast(message: string): void {
    for (const member of this.members.keys()) if (!(member instanceof PhoneLeg) && member.ready) member.send(message);
  }

  private callEvents(): CallEvents {
    return {
      onUserSpeaking: (speaking) => {
        if (speaking === this.userSpeaking) return;
        this.userSpeaking = speaking;
        this.touch();
        this.broadcast(serverMessage(speaking ? 'user-started-speaking' : 'user-stopped-speaking'));
      },
      onUserTranscript: (text, final) => {
        this.broadcast(
          serverMessage('user-transcription', { text, final, timestamp: new Date().toISOString(), user_id: 'room' }),
        );
      },
      onBotText: (text) => {
        this.broadcast(serverMessage('bot-llm-text', { text }));
        this.broadcast(serverMessage('bot-transcription', { text }));
      },
      onBotSpeaking: (speaking) => {
        if (speaking === this.botSpeaking) {
          return;
        }
        this.botSpeaking = speaking;
        this.touch();
        this.broadcast(serverMessage(speaking ? 'bot-started-speaking' : 'bot-stopped-speaking'));
      },
      onTurnLatency: (latencyMs) => {
        this.broadcast(serverMessage('metrics', { turnLatencyMs: Math.round(latencyMs) }));
      },
    };
  }
}
