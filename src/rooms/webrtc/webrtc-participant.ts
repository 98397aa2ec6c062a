import type { Logger } from 'pino';
import {
  type MediaStreamTrack,
  type RTCDataChannel,
  RTCPeerConnection,
  RTCRtpCodecParameters,
  type RTCRtpTransceiver,
  RtpHeader,
  RtpPacket,
} from 'werift';
import { DEFAULT_AUDIO_RATE_LIMITS, PeerBudget, type PeerRefusal } from '../../audio/audio-rate-limit.js';
import { TELEPHONY_SAMPLE_RATE_HZ } from '../../audio/frames.js';
import { OPUS_RTP_CLOCK_HZ } from '../../audio/opus.js';
import { decodeRtviMessage } from '../pipecat-wire.js';
import type { ParticipantEvents, RoomParticipant } from '../room-participant.js';
import { CLOSE } from '../../shared/close-codes.js';
import { serverMessage } from '../room-messages.js';
import type { RoomInput } from '../room-transport.js';
import { CameraSnapshots } from './camera-snapshots.js';
import { OpusReceiver } from './opus-receiver.js';
import { OpusSender } from './opus-sender.js';
import { announcePublicIp } from './sdp-candidates.js';
import { clientSignalling, serverSignalling } from './webrtc-messages.js';

/** Where media flows: the address announced behind a NAT, and the UDP ports the sockets bind. */
export interface WebRtcNetwork {
  publicIp?: string;
  /** Inclusive; every peer connection binds one port of it (audio, video and data are bundled). */
  udpPortRange?: [number, number];
}

export interface WebRtcParticipantLimits {
  /** A peer that sends nothing (no audio, no data channel keep-alive) for this long is gone, ms. */
  silentPeerTimeoutMs: number;
  /** Data channel messages a second (with as much burst). */
  maxMessagesPerSec: number;
  /** The largest data channel message taken (also announced in the SDP), bytes. */
  maxMessageBytes: number;
  /** Data channel bytes queued to the browser beyond which it is considered gone. */
  maxBufferedBytes: number;
}

export const DEFAULT_WEBRTC_LIMITS: WebRtcParticipantLimits = {
  // The client pings on the data channel every second and a microphone sends 50 packets a
  // second, so 5 s of nothing is a peer that left (a closed lid, a lost network) well before
  // ICE consent, which waits 30 s.
  silentPeerTimeoutMs: 5000,
  maxMessagesPerSec: 50,
  // RTVI messages are small; a camera frame as user-image is at most 48 KiB of base64.
  maxMessageBytes: 64 * 1024,
  maxBufferedBytes: 1024 * 1024,
};

/** Opus as the browser sends it (stereo-capable on the wire, mono here); the answer asks for a voice bitrate. */
const OPUS = new RTCRtpCodecParameters({
  mimeType: 'audio/opus',
  clockRate: OPUS_RTP_CLOCK_HZ,
  channels: 2,
  // The pipeline hears 8 kHz: tell the browser not to spend bits above 8 kHz of audio bandwidth.
  parameters: 'minptime=10;useinbandfec=1;maxplaybackrate=16000;maxaveragebitrate=24000',
});
const VP8 = new RTCRtpCodecParameters({
  mimeType: 'video/VP8',
  clockRate: 90000,
  rtcpFeedback: [{ type: 'nack' }, { type: 'nack', parameter: 'pli' }],
});

/** The client's transceivers, in the order it creates them (then the screen, never decoded). */
const AUDIO_INDEX = 0;
const CAMERA_INDEX = 1;

type PeerState = 'new' | 'connected' | 'gone';

/**
 * One Pipecat SmallWebRTC client in a room: a werift peer connection (ICE, DTLS, SRTP, SCTP in
 * TypeScript) that the client negotiates through the offer endpoint. The microphone arrives as
 * Opus over RTP (reordered and decoded to the room's 8 kHz by OpusReceiver); the bot's voice goes
 * out as Opus paced by the RTP clock (OpusSender); RTVI travels as text on the data channel, as
 * the websocket transport carries it in message frames. A restart (`restart_pc`) swaps the peer
 * connection under the same participant, so the room and the conversation go on. Anything wrong
 * (flood, oversized message, malformed RTVI, silence) ends this participant only.
 */
export class WebRtcParticipant implements RoomParticipant {
  readonly stats = { audioIn: 0, audioOut: 0, messagesIn: 0, restarts: 0, bytesIn: 0, videoPackets: 0, snapshots: 0 };
  /** Set on client-ready, or when the data channel of a peer back under its pc_id opens. */
  private isReady = false;
  /** A peer back under its pc_id said client-ready before and will not say it again. */
  private resumeReady: boolean;
  private input: RoomInput | undefined;
  private pc: RTCPeerConnection | undefined;
  private dc: RTCDataChannel | undefined;
  private audioTransceiver: RTCRtpTransceiver | undefined;
  private receiver: OpusReceiver;
  private readonly sender: OpusSender;
  private readonly budget: PeerBudget;
  private state: PeerState = 'new';
  private lastHeardMs = performance.now();
  private readonly watchdog: NodeJS.Timeout;
  private micEnabled = true;
  /** The camera's pictures for a vision profile; one per peer connection. */
  private camera: CameraSnapshots | undefined;

  constructor(
    readonly pcId: string,
    private readonly log: Logger,
    private readonly events: ParticipantEvents,
    private readonly network: WebRtcNetwork,
    private readonly limits: WebRtcParticipantLimits = DEFAULT_WEBRTC_LIMITS,
    /** A client that said client-ready before (a peer back under its pc_id): it will not say it again. */
    resumed = false,
    /** The room's profile sees: the camera is decoded into pictures for it. */
    private readonly wantsCamera = false,
  ) {
    this.resumeReady = resumed;
    this.budget = new PeerBudget({ maxMessagesPerSec: limits.maxMessagesPerSec, audio: DEFAULT_AUDIO_RATE_LIMITS });
    this.receiver = new OpusReceiver((pcm) => this.onMicrophone(pcm));
    this.sender = new OpusSender((frame) => this.sendRtp(frame));
    this.watchdog = setInterval(() => this.checkAlive(), Math.min(1000, limits.silentPeerTimeoutMs / 2));
    this.watchdog.unref();
  }

  get ready(): boolean {
    return this.isReady;
  }

  get isGone(): boolean {
    return this.state === 'gone';
  }

  /**
   * Answers an offer: a new peer connection for the first offer or a restart, the same one for a
   * renegotiation. Throws `SdpError` for an offer that cannot be applied.
   */
  async answer(offerSdp: string, restart: boolean): Promise<string> {
    if (this.state === 'gone') throw new Error('participant has left');
    if (restart || !this.pc) {
      if (this.pc) {
        this.stats.restarts += 1;
        this.log.info({ pcId: this.pcId }, 'webrtc peer restarts its connection');
        this.dropPeerConnection();
      }
      this.pc = this.createPeerConnection();
    }
    const pc = this.pc;
    try {
      await pc.setRemoteDescription({ type: 'offer', sdp: offerSdp });
    } catch (err) {
      throw new SdpError(`the offer could not be applied: ${(err as Error).message}`);
    }
    const transceivers = pc.getTransceivers();
    const audio = transceivers[AUDIO_INDEX];
    if (audio?.kind !== 'audio') throw new SdpError('the offer has no audio m-line first');
    audio.setDirection('sendrecv');
    // Camera and screen: received (and counted), never sent.
    for (const transceiver of transceivers.slice(AUDIO_INDEX + 1)) transceiver.setDirection('recvonly');
    this.audioTransceiver = audio;
    const answer = await pc.createAnswer();
    await pc.setLocalDescription(answer);
    await this.gathered(pc);
    const sdp = pc.localDescription?.sdp;
    if (!sdp) throw new Error('no local description after setLocalDescription');
    return this.network.publicIp ? announcePublicIp(sdp, this.network.publicIp) : sdp;
  }

  /** Trickled candidates of the browser (PATCH). A candidate werift refuses is logged and skipped. */
  async addCandidates(
    candidates: ReadonlyArray<{ candidate: string; sdp_mid?: string | null; sdp_mline_index?: number | null }>,
  ): Promise<number> {
    const pc = this.pc;
    if (!pc || this.state === 'gone') return 0;
    let added = 0;
    for (const c of candidates) {
      if (c.candidate === '') continue;
      try {
        await pc.addIceCandidate({
          candidate: c.candidate,
          sdpMid: c.sdp_mid ?? undefined,
          sdpMLineIndex: c.sdp_mline_index ?? undefined,
        });
        added += 1;
      } catch (err) {
        this.log.debug({ err, candidate: c.candidate }, 'ice candidate refused');
      }
    }
    return added;
  }

  connectInput(input: RoomInput): void {
    this.input = input;
  }

  send(message: string): void {
    const dc = this.dc;
    if (this.state === 'gone' || !dc || dc.readyState !== 'open') return;
    if (dc.bufferedAmount > this.limits.maxBufferedBytes) {
      this.close(CLOSE.flood, 'client is not reading');
      return;
    }
    dc.send(message);
  }

  playBotAudio(pcm8k: Int16Array): void {
    if (!this.isReady || this.state === 'gone') return;
    this.stats.audioOut += 1;
    this.sender.push(pcm8k);
  }

  clearBotAudio(): void {
    // What we hold is dropped; the browser's jitter buffer holds about a frame more, which plays out.
    this.sender.clear();
    this.send(serverMessage('bot-interrupted'));
  }

  /** The room ended or refused this peer: the client hears that the bot left, then the connection closes. */
  close(code: number, reason: string): void {
    if (this.state === 'gone') return;
    this.log.info({ pcId: this.pcId, code, reason }, 'webrtc participant closed');
    if (code !== CLOSE.normal && code !== CLOSE.goingAway)
      this.send(serverMessage('error', { message: reason, fatal: true }));
    this.send(serverSignalling('peerLeft'));
    const pc = this.pc;
    this.pc = undefined;
    this.finish(reason);
    // A moment for the last data channel messages to leave before the association is torn down.
    if (pc) setTimeout(() => void pc.close().catch(() => undefined), 250).unref();
  }

  private createPeerConnection(): RTCPeerConnection {
    const pc = new RTCPeerConnection({
      codecs: { audio: [OPUS], video: [VP8] },
      icePortRange: this.network.udpPortRange,
      iceUseIpv6: false,
      iceUseTcp: false,
      maxMessageSize: this.limits.maxMessageBytes,
    });
    pc.onTrack.subscribe((track) => this.onTrack(track));
    pc.onDataChannel.subscribe((dc) => this.onDataChannel(pc, dc));
    pc.connectionStateChange.subscribe((connection) => {
      if (pc !== this.pc) return;
      this.log.debug({ pcId: this.pcId, connection }, 'webrtc connection state');
      if (connection === 'connected' && this.state === 'new') this.state = 'connected';
      // A failed connection is given the silence timeout to come back with a restart offer.
    });
    return pc;
  }

  private async gathered(pc: RTCPeerConnection): Promise<void> {
    if (pc.iceGatheringState === 'complete') return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 3000);
      pc.iceGatheringStateChange.subscribe((state) => {
        if (state !== 'complete') return;
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private onTrack(track: MediaStreamTrack): void {
    if (track.kind === 'audio') {
      track.onReceiveRtp.subscribe((rtp) => {
        this.heard();
        this.stats.bytesIn += rtp.payload.byteLength;
        if (this.isReady && this.micEnabled) this.receiver.push(rtp.header.sequenceNumber, rtp.payload);
      });
      return;
    }
    const pc = this.pc;
    // Which transceiver a track belongs to is known once its packets flow.
    let camera: CameraSnapshots | null | undefined;
    track.onReceiveRtp.subscribe((rtp) => {
      this.heard();
      this.stats.videoPackets += 1;
      if (camera === undefined) {
        const cameraReceiver = pc?.getTransceivers()[CAMERA_INDEX]?.receiver;
        camera =
          pc && this.wantsCamera && pc === this.pc && cameraReceiver?.tracks.includes(track)
            ? this.cameraFor(pc, cameraReceiver, track)
            : null;
      }
      // The screen (and the camera of a profile that does not see): kept alive and counted.
      if (camera && this.isReady)
        camera.push({
          sequenceNumber: rtp.header.sequenceNumber,
          timestamp: rtp.header.timestamp,
          marker: rtp.header.marker,
          payload: rtp.payload,
        });
    });
  }

  /** Pictures of the camera for the vision path, every few seconds, from VP8 keyframes asked for by PLI. */
  private cameraFor(
    pc: RTCPeerConnection,
    receiver: { sendRtcpPLI(ssrc: number): Promise<void> },
    track: MediaStreamTrack,
  ): CameraSnapshots {
    this.camera?.close();
    this.log.info({ pcId: this.pcId, ssrc: track.ssrc }, 'camera pictures go to the vision path');
    const camera = new CameraSnapshots(
      (jpegBase64) => {
        if (pc !== this.pc || this.state === 'gone') return;
        this.stats.snapshots += 1;
        this.events.onImage(jpegBase64);
      },
      () => {
        if (track.ssrc !== undefined) receiver.sendRtcpPLI(track.ssrc).catch(() => undefined);
      },
      (err) => this.log.warn({ err, pcId: this.pcId }, 'camera picture could not be decoded'),
    );
    this.camera = camera;
    return camera;
  }

  private onDataChannel(pc: RTCPeerConnection, dc: RTCDataChannel): void {
    if (pc !== this.pc) return;
    this.dc = dc;
    dc.onMessage.subscribe((data) => {
      if (this.dc === dc) this.onMessage(data);
    });
    const opened = (): void => {
      if (this.dc !== dc || !this.resumeReady) return;
      this.resumeReady = false;
      this.markReady();
    };
    if (dc.readyState === 'open') opened();
    else dc.stateChanged.subscribe((state) => state === 'open' && opened());
  }

  private onMessage(data: string | Buffer): void {
    if (this.state === 'gone') return;
    this.heard();
    this.stats.messagesIn += 1;
    const flood = this.budget.message();
    if (flood) {
      this.refuse(flood);
      return;
    }
    const size = typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength;
    if (size > this.limits.maxMessageBytes) {
      this.refuse({ kind: 'too-big', reason: `message over ${this.limits.maxMessageBytes} bytes` });
      return;
    }
    if (typeof data !== 'string') {
      this.close(CLOSE.policyViolation, 'malformed message: binary data on the data channel; send RTVI as text');
      return;
    }
    // The client's keep-alive, once a second.
    if (data.startsWith('ping')) return;
    if (data.includes('"signalling"')) {
      const signalling = safeJson(data);
      const parsed = clientSignalling.safeParse(signalling);
      if (parsed.success) {
        if (parsed.data.message.receiver_index === AUDIO_INDEX) this.micEnabled = parsed.data.message.enabled;
        return;
      }
    }
    const frame = decodeRtviMessage(data);
    switch (frame.kind) {
      case 'malformed':
        this.close(CLOSE.policyViolation, frame.reason);
        return;
      case 'refused':
        this.send(frame.reply);
        return;
      case 'audio':
        return;
      case 'message': {
        const message = frame.message;
        if (message.type === 'client-ready') {
          if (this.isReady) this.close(CLOSE.policyViolation, 'client-ready sent twice');
          else this.markReady();
        } else if (message.type === 'user-image') {
          if (this.isReady) this.events.onImage(message.data.imageBase64);
        } else if (message.type === 'llm-function-call-result') {
          if (this.isReady) this.events.onFunctionCallResult(this, message);
        } else {
          // disconnect-bot: a Pipecat bot ends its pipeline.
          this.events.onDisconnectBot(this);
        }
      }
    }
  }

  private markReady(): void {
    this.isReady = true;
    this.events.onReady(this);
  }

  private onMicrophone(pcm8k: Int16Array): void {
    const refusal = this.budget.audio((pcm8k.length / TELEPHONY_SAMPLE_RATE_HZ) * 1000);
    if (refusal) {
      this.refuse(refusal);
      return;
    }
    this.stats.audioIn += 1;
    this.input?.push(pcm8k);
  }

  private sendRtp(frame: { sequenceNumber: number; timestamp: number; marker: boolean; payload: Buffer }): void {
    const sender = this.audioTransceiver?.sender;
    if (!sender) return;
    const header = new RtpHeader({
      sequenceNumber: frame.sequenceNumber,
      timestamp: frame.timestamp,
      marker: frame.marker,
    });
    sender.sendRtp(new RtpPacket(header, frame.payload)).catch((err: unknown) => {
      this.log.debug({ err }, 'rtp send failed');
    });
  }

  private heard(): void {
    this.lastHeardMs = performance.now();
  }

  private checkAlive(): void {
    if (this.state === 'gone') return;
    const silentMs = performance.now() - this.lastHeardMs;
    if (silentMs < this.limits.silentPeerTimeoutMs) return;
    const reason =
      this.state === 'new'
        ? `the peer never connected within ${this.limits.silentPeerTimeoutMs} ms`
        : `the peer went silent (nothing for ${this.limits.silentPeerTimeoutMs} ms)`;
    this.log.info({ pcId: this.pcId, reason }, 'webrtc peer gone');
    const pc = this.pc;
    this.pc = undefined;
    this.finish(reason);
    if (pc) void pc.close().catch(() => undefined);
  }

  private refuse(refusal: PeerRefusal): void {
    this.log.warn({ pcId: this.pcId, why: refusal.reason }, 'webrtc client exceeds its budget; closing');
    this.close(refusal.kind === 'flood' ? CLOSE.flood : CLOSE.messageTooBig, refusal.reason);
  }

  private dropPeerConnection(): void {
    const pc = this.pc;
    this.pc = undefined;
    this.dc = undefined;
    this.audioTransceiver = undefined;
    this.sender.clear();
    this.camera?.close();
    this.camera = undefined;
    // The new connection's packets start a new sequence: a fresh receiver, not a gap.
    this.receiver.free();
    this.receiver = new OpusReceiver((pcm) => this.onMicrophone(pcm));
    if (pc) void pc.close().catch(() => undefined);
  }

  private finish(reason: string): void {
    if (this.state === 'gone') return;
    this.state = 'gone';
    clearInterval(this.watchdog);
    this.sender.close();
    this.camera?.close();
    this.receiver.free();
    this.events.onGone(this, reason);
  }
}

/** An offer that cannot be applied: the client's fault (400), not the server's. */
export class SdpError extends Error {
  override name = 'SdpError';
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
