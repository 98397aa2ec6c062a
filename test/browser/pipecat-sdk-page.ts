/**
 * A front-end as a team on the hosted service would have it: Pipecat's own client and websocket
 * transport, nothing else. Bundled with esbuild by test/browser/pipecat-sdk.test.ts and driven
 * from there through `globalThis.sdkTest`.
 *
 * The media manager is the transport's WavMediaManager (microphone and player in Web Audio):
 * the transport's default one runs Daily's call object, which loads its code from Daily's CDN,
 * and this page loads nothing from elsewhere. The subclass only counts the bot audio handed to
 * the player.
 */
import { PipecatClient } from '@pipecat-ai/client-js';
import { WavMediaManager, WebSocketTransport } from '@pipecat-ai/websocket-transport';

class CountingMediaManager extends WavMediaManager {
  botSamples = 0;

  override bufferBotAudio(data: ArrayBuffer | Int16Array, id?: string): Int16Array {
    this.botSamples += data instanceof Int16Array ? data.length : data.byteLength / 2;
    return super.bufferBotAudio(data, id);
  }

  /** Samples the player has played so far (its worklet's position). */
  async playedSamples(): Promise<number> {
    const player = (
      this as unknown as { _wavStreamPlayer: { getTrackSampleOffset(): Promise<{ offset: number } | null> } }
    )._wavStreamPlayer;
    return (await player.getTrackSampleOffset())?.offset ?? 0;
  }
}

interface SdkEvent {
  type: string;
  data: unknown;
  /** Bot audio the SDK had received when the event fired, samples. */
  botSamples: number;
}

const events: SdkEvent[] = [];
// The SDK's defaults: 16 kHz microphone; the player plays at 24 kHz.
const media = new CountingMediaManager(512, 16000);
const record =
  (type: string) =>
  (data?: unknown): void => {
    events.push({
      type,
      data: data === undefined ? null : JSON.parse(JSON.stringify(data)),
      botSamples: media.botSamples,
    });
  };

const client = new PipecatClient({
  transport: new WebSocketTransport({ mediaManager: media }),
  enableMic: true,
  enableCam: false,
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
    onDisconnected: record('disconnected'),
    onTransportStateChanged: record('transportState'),
    onError: (message) => record('error')(message.data),
  },
});

(globalThis as unknown as { sdkTest: unknown }).sdkTest = {
  events,
  botSamples: () => media.botSamples,
  playedSamples: () => media.playedSamples(),
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
  /** A client-side function: each call is recorded as an event, and answered with `result`. */
  registerFunction: (name: string, result: Record<string, unknown>) =>
    client.registerFunctionCallHandler(name, async (params) => {
      record('functionCall')(params);
      return result;
    }),
};
