import type { BotConfigForCall } from '../bots/bot-config-service.js';
import { isSpeechToSpeech } from '../bots/profiles.js';
import type { CallSessionDeps } from '../pipeline/call-deps.js';
import { CallSession } from '../pipeline/call-session.js';
import type { CallTransport, CallTransportHandler } from '../pipeline/call-transport.js';
import { S2sCallSession } from '../pipeline/s2s-call-session.js';
import type { CallRecorder } from '../recordings/call-tracks-recorder.js';
import { tapHandler, tapTransport } from '../recordings/recording-tap.js';

/** A bot on a transport: what to attach to it, and how to end it politely. */
export interface BotOnCall {
  /** Give this to the transport: it receives the call's start, audio, DTMF, marks and end. */
  readonly handler: CallTransportHandler;
  /** The bot stops what it says, says `text`, and the leg closes with `closeCode` and `reason`. */
  endWithGoodbye(reason: string, closeCode: number, text?: string): void;
}

/**
 * Puts the configured bot on a transport, the same way for a phone call and a room: the
 * pipeline, or a speech-to-speech vendor session for those profiles, and with a recorder a tap on
 * both directions (the transport's outbound frames are the bot track, inbound the caller track).
 */
export function startBot(
  transport: CallTransport,
  config: BotConfigForCall,
  deps: CallSessionDeps,
  recorder?: CallRecorder,
): BotOnCall {
  const Session = isSpeechToSpeech(config.body.bot_profile) ? S2sCallSession : CallSession;
  const session = new Session(recorder ? tapTransport(transport, recorder) : transport, config, deps);
  return {
    handler: recorder ? tapHandler(session, recorder) : session,
    endWithGoodbye: (reason, closeCode, text) => session.endWithGoodbye(reason, closeCode, text),
  };
}
