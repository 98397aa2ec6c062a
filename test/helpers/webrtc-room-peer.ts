import OpusScript from 'opusscript';
import {
  type RTCDataChannel,
  RTCPeerConnection,
  RTCRtpCodecParameters,
  type RTCRtpTransceiver,
  RtpHeader,
  RtpPacket,
} from 'werift';
import { OpusDecoder8k } from '../../src/audio/opus.js';

/**
 * A whole SmallWebRTC participant made of werift, for tests and benchmarks that need many peers
 * or no browser: the offer Pipecat's transport makes (audio sendrecv, video sendrecv, data
 * channel "chat"), its candidates either in the offer or trickled by PATCH (the client's default),
 * RTVI on the data channel, a microphone of Opus packets sent on the RTP clock, and the bot's
 * audio counted (and decoded to 8 kHz for its loudness when asked). A restart (`restart_pc`)
 * makes a new connection under the same pc_id, as the client does after a network change.
 */
export interface WebRtcRoomPeerOptions {
  /** The offer URL (bots/start's `webrtcRequestParams.endpoint`). */
  endpoint: string;
  /** Where candidates are PATCHed; the offer URL unless set (e.g. the same path on another node). */
  patchEndpoint?: string;
  /**
   * Where the client's candidates go: in the offer (the client's `waitForICEGathering` mode), by
   * PATCH after it (its default, trickle), or nowhere (a relay in the path: the server learns the
   * relay's address from the connectivity checks).
   */
  candidates?: 'offer' | 'patch' | 'withheld';
  /** Applied to the answer before it is used: a relay in the path names itself instead of the server. */
  rewriteAnswer?: (sdp: string) => string;
  /** Decode the bot's audio to measure its loudness (costs CPU; off for load). */
  decode?: boolean;
}

export interface HeardPacket {
  atMs: number;
  /** RMS of the decoded 8 kHz frame, 0..1 (0 when not decoded). */
  rms: number;
}

/** The browser's microphone: Opus at 48 kHz, the bitrate the server's answer asks for at most. */
const MIC_RATE_HZ = 48000;
const MIC_FRAME_SAMPLES = MIC_RATE_HZ / 50;
const MIC_BITRATE_BPS = 24_000;

/** `pcm48k` as the 20 ms Opus packets a browser would send (trailing partial frame dropped). */
export function encodeMicrophone(pcm48k: Int16Array): Buffer[] {
  const codec = new OpusScript(MIC_RATE_HZ, 1, OpusScript.Application.VOIP);
  codec.setBitrate(MIC_BITRATE_BPS);
  const packets: Buffer[] = [];
  for (let at = 0; at + MIC_FRAME_SAMPLES <= pcm48k.length; at += MIC_FRAME_SAMPLES) {
    const frame = pcm48k.subarray(at, at + MIC_FRAME_SAMPLES);
    packets.push(
      Buffer.from(codec.encode(Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength), MIC_FRAME_SAMPLES)),
    );
  }
  codec.delete();
  return packets;
}

export class WebRtcRoomPeer {
  pcId = '';
  /** RTVI messages from the server, parsed, in order. */
  readonly messages: Array<{ label?: string; type: string; data?: any }> = [];
  /** RTP of the bot's audio received, and the microphone's sent: packets and payload bytes. */
  readonly audioIn = { packets: 0, bytes: 0 };
  readonly audioOut = { packets: 0, bytes: 0 };
  /** Candidates the server said it took, over every PATCH. */
  patchedCandidates = 0;
  readonly heard: HeardPacket[] = [];
  /** Set when the data channel closes or the connection fails. */
  ended = false;
  private pc!: RTCPeerConnection;
  private dc!: RTCDataChannel;
  private audio!: RTCRtpTransceiver;
  private decoder: OpusDecoder8k | undefined;
  private sequenceNumber = Math.floor(Math.random() * 0x10000);
  private timestamp = Math.floor(Math.random() * 0x100000000);
  private readonly waiters: Array<() => void> = [];

  private constructor(private readonly options: WebRtcRoomPeerOptions) {}

  /** Negotiates, waits for the data channel, and says client-ready. */
  static async connect(options: WebRtcRoomPeerOptions): Promise<WebRtcRoomPeer> {
    const peer = new WebRtcRoomPeer(options);
    await peer.negotiate(false);
    peer.sendJson({ label: 'rtvi-ai', type: 'client-ready', id: 'ready-1', data: { version: '1.0.0', about: {} } });
    return peer;
  }

  /** A new connection under the same pc_id (`restart_pc`), through `endpoint` when given. */
  async restart(endpoint?: string): Promise<void> {
    const old = this.pc;
    await this.negotiate(true, endpoint);
    await old.close().catch(() => undefined);
  }

  sendJson(message: unknown): void {
    if (this.dc.readyState === 'open') this.dc.send(JSON.stringify(message));
  }

  /** One 20 ms microphone packet (the caller paces them). */
  sendOpus(payload: Buffer): void {
    const header = new RtpHeader({ sequenceNumber: this.sequenceNumber, timestamp: this.timestamp });
    this.sequenceNumber = (this.sequenceNumber + 1) & 0xffff;
    this.timestamp = (this.timestamp + MIC_FRAME_SAMPLES) >>> 0;
    this.audioOut.packets += 1;
    this.audioOut.bytes += payload.byteLength;
    this.audio.sender.sendRtp(new RtpPacket(header, payload)).catch(() => undefined);
  }

  /**
   * A microphone on the RTP clock: what `say` is given, then silence, one packet every 20 ms until
   * `stop` (silence too keeps the peer alive, as a browser's open microphone does).
   */
  startMicrophone(silence: Buffer): { say(packets: readonly Buffer[]): Promise<void>; stop(): void } {
    const queue: Buffer[] = [];
    let spoken: (() => void) | undefined;
    const startMs = performance.now();
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    const tick = (): void => {
      const dueFrames = Math.floor((performance.now() - startMs) / 20) + 1;
      while (sent < dueFrames) {
        sent += 1;
        const packet = queue.shift();
        this.sendOpus(packet ?? silence);
        if (packet && queue.length === 0) spoken?.();
      }
      timer = setTimeout(tick, startMs + sent * 20 - performance.now());
    };
    tick();
    return {
      say: (packets) =>
        new Promise<void>((resolve) => {
          queue.push(...packets);
          spoken = resolve;
        }),
      stop: () => clearTimeout(timer),
    };
  }

  of(type: string): Array<{ type: string; data?: any }> {
    return this.messages.filter((m) => m.type === type);
  }

  /** Resolves when `predicate` holds, or rejects after `timeoutMs` naming what was awaited. */
  async until(what: string, predicate: () => boolean, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`timed out waiting for ${what}; got ${this.messages.map((m) => m.type).join(', ')}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 200));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  async close(): Promise<void> {
    this.decoder?.free();
    this.decoder = undefined;
    await this.pc.close().catch(() => undefined);
  }

  private async negotiate(restart: boolean, endpoint = this.options.endpoint): Promise<void> {
    const pc = new RTCPeerConnection({
      codecs: {
        audio: [new RTCRtpCodecParameters({ mimeType: 'audio/opus', clockRate: 48000, channels: 2 })],
        video: [new RTCRtpCodecParameters({ mimeType: 'video/VP8', clockRate: 90000 })],
      },
      iceUseIpv6: false,
      iceUseTcp: false,
    });
    const audio = pc.addTransceiver('audio', { direction: 'sendrecv' });
    pc.addTransceiver('video', { direction: 'sendrecv' });
    const dc = pc.createDataChannel('chat', { ordered: true });
    audio.onTrack.subscribe((track) => {
      track.onReceiveRtp.subscribe((rtp) => {
        if (pc !== this.pc) return;
        this.audioIn.packets += 1;
        this.audioIn.bytes += rtp.payload.byteLength;
        if (!this.options.decode) return;
        this.decoder ??= new OpusDecoder8k();
        const pcm = this.decoder.decode(rtp.payload);
        this.heard.push({ atMs: performance.now(), rms: pcm ? rmsOf(pcm) : 0 });
      });
    });
    dc.onMessage.subscribe((data) => {
      if (pc !== this.pc) return;
      try {
        this.messages.push(JSON.parse(data.toString()));
      } catch {
        this.messages.push({ type: `unparsed:${data.toString().slice(0, 40)}` });
      }
      this.wake();
    });
    pc.connectionStateChange.subscribe((state) => {
      if (pc === this.pc && (state === 'failed' || state === 'closed')) this.end();
    });
    dc.stateChanged.subscribe((state) => {
      if (pc === this.pc && state === 'closed') this.end();
    });

    await pc.setLocalDescription(await pc.createOffer());
    if (pc.iceGatheringState !== 'complete')
      await new Promise<void>((resolve) => pc.iceGatheringStateChange.subscribe((s) => s === 'complete' && resolve()));
    const lines = pc.localDescription!.sdp.split('\r\n');
    const candidates = lines.filter((line) => line.startsWith('a=candidate:')).map((line) => line.slice(2));
    const mode = this.options.candidates ?? 'offer';
    const offer =
      mode !== 'offer'
        ? lines.filter((line) => !line.startsWith('a=candidate:') && line !== 'a=end-of-candidates').join('\r\n')
        : pc.localDescription!.sdp;

    const response = await fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        sdp: offer,
        type: 'offer',
        pc_id: restart ? this.pcId : null,
        restart_pc: restart,
        requestData: {},
      }),
    });
    if (!response.ok) throw new Error(`offer refused: ${response.status} ${await response.text()}`);
    const answer = (await response.json()) as { sdp: string; pc_id: string };
    this.pcId = answer.pc_id;
    this.pc = pc;
    this.dc = dc;
    this.audio = audio;
    const sdp = this.options.rewriteAnswer ? this.options.rewriteAnswer(answer.sdp) : answer.sdp;
    await pc.setRemoteDescription({ type: 'answer', sdp });
    if (mode === 'patch' && candidates.length > 0) {
      const patched = await fetch(this.options.patchEndpoint ?? endpoint, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          pc_id: this.pcId,
          candidates: candidates.map((candidate) => ({ candidate, sdp_mid: '0', sdp_mline_index: 0 })),
        }),
      });
      if (!patched.ok) throw new Error(`candidates refused: ${patched.status} ${await patched.text()}`);
      this.patchedCandidates += ((await patched.json()) as { added: number }).added;
    }
    if (dc.readyState !== 'open')
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('the data channel did not open within 60 s')), 60_000);
        dc.stateChanged.subscribe((s) => {
          if (s !== 'open') return;
          clearTimeout(timer);
          resolve();
        });
      });
  }

  private end(): void {
    this.ended = true;
    this.wake();
  }

  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }
}

function rmsOf(pcm: Int16Array): number {
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return Math.sqrt(sum / Math.max(1, pcm.length)) / 32768;
}
