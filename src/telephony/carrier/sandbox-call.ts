import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { readMulawFile } from '../../tools/simulator/clip-file.js';
import type { CallerClip } from '../../tools/simulator/caller-clip.js';
import { PhoneCall } from '../../tools/simulator/phone-call.js';
import type { CallerStep, Scenario } from '../../tools/simulator/scenario.js';
import { twilioSid } from '../twilio-sids.js';
import { signatureFor } from '../../tools/simulator/twiml-webhook.js';
import type { OutboundCallRequest } from './carrier.js';
import { sandboxNumber } from './sandbox-inventory.js';

/**
 * How a sandbox number behaves when called. Three numbers of every area code are reserved so
 * every outcome can be tried: 0197 never answers, 0198 is busy, 0199 fails as unreachable.
 */
export type CalleeBehaviour = 'answers' | 'no-answer' | 'busy' | 'unreachable';

export function calleeBehaviour(number: string): CalleeBehaviour {
  if (number.endsWith('5550197')) return 'no-answer';
  if (number.endsWith('5550198')) return 'busy';
  if (number.endsWith('5550199')) return 'unreachable';
  return 'answers';
}

/** The number a target reaches: itself, or a SIP URI's user part. */
export function dialledNumber(to: string): string {
  const sip = /^sips?:([^@;]+)@/.exec(to);
  return sip ? decodeURIComponent(sip[1]!) : to;
}

/** Why the sandbox cannot ring `to` (only its own fictional numbers are reachable), or undefined. */
export function sandboxRefusal(to: string): string | undefined {
  const number = dialledNumber(to);
  if (sandboxNumber(number)) return undefined;
  return `${number} is not a sandbox number: the sandbox carrier only reaches its fictional +1 NXX 555-01xx numbers (set SWITCHBOARD_CARRIER=twilio to ring real phones)`;
}

/** A real carrier takes a moment to ring; the sandbox rings for this long before the callee answers. */
export const SANDBOX_RING_MS = 1000;
/** A simulated callee never stays on the line longer than this. */
const MAX_CALLEE_MS = 120_000;
/** Two things the callee says, from the project's recorded speech, each after the bot has spoken. */
const CALLEE_CLIPS = ['A04_cheetah_platforms.ulaw', 'A06_birch_canoe.ulaw'];
const FIXTURES_DIR = fileURLToPath(new URL('../../../fixtures/audio/', import.meta.url));

let clipsLoaded: Promise<Record<string, CallerClip>> | undefined;

/** The callee's lines; missing fixture files (a trimmed install) leave a callee who only listens. */
function calleeClips(log: Logger): Promise<Record<string, CallerClip>> {
  clipsLoaded ??= Promise.all(CALLEE_CLIPS.map((file) => readMulawFile(FIXTURES_DIR + file))).then(
    (audio) => Object.fromEntries(audio.map((mulaw, i) => [`line-${i + 1}`, { mulaw }])),
    (err: unknown) => {
      log.warn({ err }, 'sandbox callee has no recorded speech; it will listen and hang up');
      return {};
    },
  );
  return clipsLoaded;
}

/** Listen to the bot, answer after it finishes, twice, then say goodbye by hanging up. */
function calleeScenario(clips: Record<string, CallerClip>): Scenario {
  const steps: CallerStep[] = [{ do: 'wait-bot-audio', timeoutMs: 8000 }, { do: 'wait-bot-silence', ms: 700, timeoutMs: 20_000 }];
  for (const clip of Object.keys(clips)) {
    steps.push({ do: 'play', clip }, { do: 'wait-bot-audio', timeoutMs: 10_000 }, { do: 'wait-bot-silence', ms: 700, timeoutMs: 20_000 });
  }
  return { steps, endOfScript: 'hangup', maxDurationMs: MAX_CALLEE_MS };
}

export interface SandboxCallOptions {
  /** Signs the status callbacks and the answer webhook, as Twilio would, when set. */
  authToken?: string;
  log: Logger;
}

/**
 * One outbound call on the sandbox carrier, played the way Twilio plays it: status callbacks
 * (initiated, ringing, then in-progress and completed, or busy / no-answer / failed / canceled)
 * to the status URL, and on answer the answer URL's TwiML and its media stream, where a
 * simulated callee listens to the bot and answers it with recorded speech.
 */
export class SandboxOutboundCall {
  readonly callSid = twilioSid('CA');
  private readonly abort = new AbortController();
  private sequence = 0;
  private answeredAt: number | undefined;
  private readonly log: Logger;

  constructor(
    private readonly request: OutboundCallRequest,
    private readonly options: SandboxCallOptions,
  ) {
    this.log = options.log.child({ callSid: this.callSid, to: request.to });
  }

  /** Hang up from the service's side: a ringing call is cancelled, an answered one ends. */
  hangUp(): void {
    this.abort.abort();
  }

  async run(): Promise<void> {
    const behaviour = calleeBehaviour(dialledNumber(this.request.to));
    await this.status('initiated');
    await this.status('ringing');
    const ringMs = behaviour === 'no-answer' ? this.request.ringTimeoutSecs * 1000 : SANDBOX_RING_MS;
    const rang = await sleep(ringMs, true, { signal: this.abort.signal }).catch(() => false);
    if (!rang) return this.status('canceled');
    if (behaviour === 'no-answer') return this.status('no-answer');
    if (behaviour === 'busy') return this.status('busy');
    if (behaviour === 'unreachable') return this.status('failed');
    await this.converse();
  }

  private async converse(): Promise<void> {
    this.answeredAt = Date.now();
    await this.status('in-progress');
    const clips = await calleeClips(this.log);
    const call = new PhoneCall({
      target: { webhookUrl: this.request.answerUrl },
      scenario: calleeScenario(clips),
      clips,
      callSid: this.callSid,
      from: this.request.from,
      to: this.request.to,
      direction: 'outbound-api',
      authToken: this.options.authToken,
      signal: this.abort.signal,
    });
    const report = await call.run();
    this.log.info(
      {
        outcome: report.outcome,
        endReason: report.endReason,
        durationMs: Math.round(report.durationMs),
        botAudioMs: report.metrics.bot.receivedAudioMs,
        calleeTurns: report.metrics.utterances.length,
        replyLatenciesMs: report.metrics.utterances.map((u) => u.replyLatencyMs),
      },
      'sandbox callee hung up',
    );
    await this.status('completed');
  }

  /** One status callback, signed like Twilio's; a receiver that fails is logged, not retried. */
  private async status(callStatus: string): Promise<void> {
    const form: Record<string, string> = {
      AccountSid: 'AC' + '0'.repeat(32),
      CallSid: this.callSid,
      CallStatus: callStatus,
      Direction: 'outbound-api',
      From: this.request.from,
      To: this.request.to,
      SequenceNumber: String(this.sequence++),
      Timestamp: new Date().toUTCString(),
    };
    if (this.answeredAt !== undefined && callStatus === 'completed') form.CallDuration = String(Math.round((Date.now() - this.answeredAt) / 1000));
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (this.options.authToken) headers['x-twilio-signature'] = await signatureFor(this.options.authToken, this.request.statusUrl, form);
    try {
      const response = await fetch(this.request.statusUrl, { method: 'POST', headers, body: new URLSearchParams(form).toString(), signal: AbortSignal.timeout(5000) });
      await response.body?.cancel();
      if (!response.ok) this.log.warn({ status: response.status, callStatus }, 'sandbox status callback was refused');
    } catch (err) {
      this.log.warn({ err, callStatus }, 'sandbox status callback failed');
    }
  }
}
