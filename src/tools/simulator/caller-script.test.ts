import { describe, expect, it } from 'vitest';
import { FRAME_MS, MULAW_FRAME_BYTES } from '../../audio/frames.js';
import { BotAudioTracker } from './bot-audio-tracker.js';
import { CallerScript, type ScriptHost } from './caller-script.js';
import type { CallerStep } from './scenario.js';

/** A script on a clock of 20 ms ticks, the bot's audio played through the real carrier buffer. */
function call(steps: CallerStep[]) {
  const script = new CallerScript({ steps, endOfScript: 'stay' });
  const bot = new BotAudioTracker({
    segmentGapMs: 200,
    clearWindowMs: 500,
    onMarkPlayed: () => undefined,
    onEvent: () => undefined,
  });
  const done: string[] = [];
  let clipPlaying = false;
  const host: ScriptHost = {
    bot,
    play: (clip) => {
      done.push(`play ${clip}`);
      clipPlaying = true;
    },
    sendDtmf: () => undefined,
    hangup: (reason) => done.push(`hangup: ${reason}`),
    event: (_atMs, kind, detail) => done.push(`${kind}: ${detail}`),
  };
  const frame = new Uint8Array(MULAW_FRAME_BYTES);
  let nowMs = 0;
  return {
    done,
    script,
    /** Runs the call for `ms`: the carrier plays a frame each tick; the script runs unless a clip plays. */
    run(ms: number) {
      for (const end = nowMs + ms; nowMs < end; nowMs += FRAME_MS) {
        bot.tick(nowMs, frame);
        if (!clipPlaying) script.advance(nowMs, host);
      }
    },
    botSays(ms: number) {
      bot.media(Buffer.alloc((ms / FRAME_MS) * MULAW_FRAME_BYTES, 0xff).toString('base64'), nowMs);
    },
    clipEnds() {
      clipPlaying = false;
    },
  };
}

describe('caller script: waiting for the bot after a clip', () => {
  // The bot hears the speech end and answers while the clip's trailing silence still plays; its
  // short answer is over before the clip's last frame has gone.
  function answeredDuringTheClip(wait: Partial<{ sinceLastClip: boolean }>) {
    const c = call([
      { do: 'play', clip: 'question' },
      { do: 'wait-bot-audio', timeoutMs: 5000, ...wait },
      { do: 'wait-bot-silence', ms: 700, timeoutMs: 5000, ...wait },
      { do: 'hangup' },
    ]);
    c.run(FRAME_MS);
    c.run(1000);
    c.botSays(400);
    c.run(1000);
    c.clipEnds();
    return c;
  }

  it('with sinceLastClip, an answer that began and ended during the clip counts: the caller goes on once the bot has been quiet 700 ms', () => {
    const c = answeredDuringTheClip({ sinceLastClip: true });
    // The answer ended about 600 ms before the clip did.
    c.run(60);
    expect(c.done).toEqual(['play question']);
    c.run(200);
    expect(c.done).toEqual(['play question', 'hangup: hangup step']);
  });

  it('without it, wait-bot-audio waits for bot audio that begins after the clip, as documented, until it gives up', () => {
    const c = answeredDuringTheClip({});
    c.run(4900);
    expect(c.done).toEqual(['play question']);
    c.run(200);
    expect(c.done).toEqual([
      'play question',
      'wait-timeout: wait-bot-audio step 2 gave up after 5000 ms',
      'hangup: hangup step',
    ]);
  });
});

describe('caller script: a bot that never spoke', () => {
  it('wait-bot-silence right after a wait-bot-audio that gave up ends at once: no second timeout', () => {
    const c = call([
      { do: 'wait-bot-audio', timeoutMs: 2000 },
      { do: 'wait-bot-silence', ms: 700, timeoutMs: 20_000 },
      { do: 'hangup' },
    ]);
    c.run(1980);
    expect(c.done).toEqual([]);
    c.run(40);
    expect(c.done).toEqual(['wait-timeout: wait-bot-audio step 1 gave up after 2000 ms', 'hangup: hangup step']);
  });

  it('wait-bot-silence on its own still waits for the bot to have spoken', () => {
    const c = call([{ do: 'wait-bot-silence', ms: 700, timeoutMs: 5000 }, { do: 'hangup' }]);
    c.run(2000);
    expect(c.done).toEqual([]);
    c.botSays(200);
    c.run(800);
    expect(c.done).toEqual([]);
    c.run(200);
    expect(c.done).toEqual(['hangup: hangup step']);
  });
});
