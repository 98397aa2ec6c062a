/**
 * A front-end on Pipecat's own client and SmallWebRTC transport, nothing else. Bundled with
 * esbuild by test/browser/pipecat-webrtc.test.ts and driven from there through `globalThis.sdkTest`.
 *
 * The media manager is the transport's WavMediaManager (the microphone through getUserMedia with
 * the browser's default echo cancellation and noise suppression): the default one runs Daily's
 * call object, which loads its code from Daily's CDN. The bot's audio arrives as a remote WebRTC
 * track, which the page plays as a front-end does (an audio element) and meters: a worklet
 * measures its level every 10 ms, so the test knows how much of the bot it heard, and when.
 */
import { PipecatClient } from '@pipecat-ai/client-js';
import { SmallWebRTCTransport, WavMediaManager } from '@pipecat-ai/small-webrtc-transport';

interface SdkEvent {
  type: string;
  data: unknown;
  /** Bot audio heard (loud 10 ms blocks of the remote track) when the event fired, ms. */
  heardMs: number;
  atMs: number;
}

/** A 10 ms block louder than this (RMS, full scale 1) is the bot speaking; silence and comfort noise are far below. */
const LOUD_RMS = 0.01;

const events: SdkEvent[] = [];
let heardMs = 0;
/** Every 10 ms block of the bot's track: when it arrived here and how loud it was. */
const blocks: Array<{ atMs: number; rms: number }> = [];
let metering = false;

const METER_WORKLET = `
class Meter extends AudioWorkletProcessor {
  constructor() { super(); this.sum = 0; this.n = 0; }
  process(inputs) {
    const channel = inputs[0] && inputs[0][0];
    if (channel) {
      for (let i = 0; i < channel.length; i++) { this.sum += channel[i] * channel[i]; this.n++; }
      if (this.n >= sampleRate / 100) { this.port.postMessage(Math.sqrt(this.sum / this.n)); this.sum = 0; this.n = 0; }
    }
    return true;
  }
}
registerProcessor('meter', Meter);
`;

async function meter(track: MediaStreamTrack): Promise<void> {
  if (metering) return;
  metering = true;
  const stream = new MediaStream([track]);
  // Chrome pulls a remote WebRTC track into Web Audio only while a media element plays it.
  const element = new Audio();
  element.srcObject = stream;
  element.muted = true;
  void element.play().catch(() => undefined);
  const context = new AudioContext();
  await context.audioWorklet.addModule(URL.createObjectURL(new Blob([METER_WORKLET], { type: 'text/javascript' })));
  const node = new AudioWorkletNode(context, 'meter');
  node.port.onmessage = (message: MessageEvent<number>) => {
    blocks.push({ atMs: performance.now(), rms: message.data });
    if (message.data > LOUD_RMS) heardMs += 10;
  };
  context.createMediaStreamSource(stream).connect(node);
  await context.resume();
}

const record =
  (type: string) =>
  (data?: unknown): void => {
    events.push({
      type,
      data: data === undefined ? null : JSON.parse(JSON.stringify(data)),
      heardMs,
      atMs: performance.now(),
    });
  };

/** A vision profile's page (`/#camera`) sends the camera too. */
const withCamera = location.hash === '#camera';

/**
 * WavMediaManager with the camera: the transport puts `tracks().local.video` on its video
 * transceiver. (The SDK's media manager with a camera, DailyMediaManager, loads Daily's code from
 * its CDN, which a test cannot reach.)
 */
class CameraMediaManager extends WavMediaManager {
  private camera: MediaStreamTrack | undefined;

  async connect(): Promise<void> {
    await super.connect();
    if (withCamera && !this.camera)
      this.camera = (await navigator.mediaDevices.getUserMedia({ video: true })).getVideoTracks()[0];
  }

  tracks() {
    const tracks = super.tracks();
    return this.camera ? { local: { ...tracks.local, video: this.camera } } : tracks;
  }
}

const client = new PipecatClient({
  transport: new SmallWebRTCTransport({ mediaManager: new CameraMediaManager() }),
  enableMic: true,
  enableCam: withCamera,
  callbacks: {
    onBotReady: record('botReady'),
    onUserStartedSpeaking: record('userStartedSpeaking'),
    onUserStoppedSpeaking: record('userStoppedSpeaking'),
    onBotStartedSpeaking: record('botStartedSpeaking'),
    onBotStoppedSpeaking: record('botStoppedSpeaking'),
    onUserTranscript: record('userTranscript'),
    onBotTranscript: record('botTranscript'),
    onBotLlmText: record('botLlmText'),
    onMetrics: record('metrics'),
    onConnected: record('connected'),
    onDisconnected: record('disconnected'),
    onBotDisconnected: record('botDisconnected'),
    onTransportStateChanged: record('transportState'),
    onError: (message) => record('error')(message.data),
    onTrackStarted: (track, participant) => {
      if (participant?.local || track.kind !== 'audio') return;
      record('botTrack')();
      void meter(track);
    },
  },
});

(globalThis as unknown as { sdkTest: unknown }).sdkTest = {
  events,
  blocks,
  heardMs: () => heardMs,
  /** The one call a front-end makes: the answer of bots/start goes to the transport untouched. */
  start: (endpoint: string, apiKey: string, requestData: Record<string, unknown>) =>
    client
      .startBotAndConnect({
        endpoint,
        headers: new Headers({ Authorization: `Bearer ${apiKey}` }),
        requestData: requestData as never,
      })
      .then(
        () => 'connected',
        (err: unknown) => `failed: ${String(err)}`,
      ),
  disconnectBot: () => client.disconnectBot(),
  disconnect: () => client.disconnect(),
};
