import type { BotConfigForCall } from '../bots/bot-config-service.js';
import { isSpeechToSpeech } from '../bots/profiles.js';
import type { CallRecordBuilder } from '../records/call-record-builder.js';
import type { CallEvents, CallSessionDeps } from '../pipeline/call-deps.js';
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
 * both directions (the transport's outbound frames are the bot track, inbound the caller track),
 * and with a record builder the call reported to it as it goes.
 */
export function startBot(
  transport: CallTransport,
  config: BotConfigForCall,
  deps: CallSessionDeps,
  recorder?: CallRecorder,
  record?: CallRecordBuilder,
): BotOnCall {
  const Session = isSpeechToSpeech(config.body.bot_profile) ? S2sCallSession : CallSession;
  const sessionDeps = record ? { ...deps, record, events: bothEvents(deps.events, record.events) } : deps;
  const session = new Session(recorder ? tapTransport(transport, recorder) : transport, config, sessionDeps);
  return {
    handler: recorder ? tapHandler(session, recorder) : session,
    endWithGoodbye: (reason, closeCode, text) => session.endWithGoodbye(reason, closeCode, text),
  };
}

/** Every event to both listeners (a room's, and the record's). */
function bothEvents(first: CallEvents | undefined, second: CallEvents): CallEvents {
  if (!first) return second;
  return {
    onUserSpeaking: (speaking) => {
      first.onUserSpeaking?.(speaking);
      second.onUserSpeaking?.(speaking);
    },
    onUserTranscript: (text, final) => {
      first.onUserTranscript?.(text, final);
      second.onUserTranscript?.(text, final);
    },
    onBotText: (text) => {
      first.onBotText?.(text);
      second.onBotText?.(text);
    },
    onBotSpeaking: (speaking) => {
      first.onBotSpeaking?.(speaking);
      second.onBotSpeaking?.(speaking);
    },
    onTurnLatency: (latencyMs) => {
      first.onTurnLatency?.(latencyMs);
      second.onTurnLatency?.(latencyMs);
    },
  };
}
