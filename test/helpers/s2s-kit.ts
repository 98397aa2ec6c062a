import type { S2sEvents } from '../../src/providers/s2s/types.js';
import type { LlmToolCall, ProviderError } from '../../src/providers/types.js';
import { toneAudio } from '../../src/tools/emulators/emulator-kit.js';

/** What a speech-to-speech session reported, in order, and a way to await a report. */
export class RecordedS2sEvents implements S2sEvents {
  readonly audio = new Map<string, number>();
  readonly itemsDone: string[] = [];
  readonly botTranscripts: Array<{ itemId: string; text: string }> = [];
  readonly userTranscripts: string[] = [];
  readonly errors: ProviderError[] = [];
  readonly toolCalls: LlmToolCall[] = [];
  speechStarts = 0;
  /** Called inside onSpeechStarted, as a call session barges in: before any later event. */
  bargeIn: (() => void) | undefined;
  private waiters: Array<{ check: () => boolean; resolve: () => void }> = [];

  onAudio(itemId: string, mulaw: Uint8Array): void {
    this.audio.set(itemId, (this.audio.get(itemId) ?? 0) + mulaw.length);
    this.changed();
  }

  onItemDone(itemId: string): void {
    this.itemsDone.push(itemId);
    this.changed();
  }

  onSpeechStarted(): void {
    this.speechStarts += 1;
    this.bargeIn?.();
    this.changed();
  }

  onUserTranscript(text: string): void {
    this.userTranscripts.push(text);
    this.changed();
  }

  onBotTranscript(itemId: string, text: string): void {
    this.botTranscripts.push({ itemId, text });
    this.changed();
  }

  onToolCall(call: LlmToolCall): void {
    this.toolCalls.push(call);
    this.changed();
  }

  onError(error: ProviderError): void {
    this.errors.push(error);
    this.changed();
  }

  /** Resolves once `check` holds (checked at every event); the test's own timeout bounds the wait. */
  until(check: () => boolean): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ check, resolve }));
  }

  private changed(): void {
    this.waiters = this.waiters.filter((waiter) => {
      if (!waiter.check()) return true;
      waiter.resolve();
      return false;
    });
  }
}

/** 20 ms phone frames (8 kHz mu-law): the emulators' tone, which they hear as speech. */
export function speechFrames(ms: number): Uint8Array[] {
  const frames: Uint8Array[] = [];
  for (let at = 0; at < ms; at += 20) frames.push(toneAudio({ encoding: 'mulaw', sampleRateHz: 8000 }, at * 8, 160));
  return frames;
}

/** 20 ms phone frames of silence. */
export function silenceFrames(ms: number): Uint8Array[] {
  return Array.from({ length: Math.ceil(ms / 20) }, () => new Uint8Array(160).fill(0xff));
}
