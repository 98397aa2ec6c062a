import { z } from 'zod';

/**
 * What the simulated caller does, as plain data so load-test scenarios can live in JSON files.
 *
 * Steps run one after another in caller time (20 ms frames): a step starts on the frame after the
 * previous one finished. Waits measure the emulated playout of the bot's audio, i.e. what a
 * caller would hear, not when bytes arrived.
 */
export type CallerStep =
  /** Pause for `ms` (the caller sends silence meanwhile, as a phone does). */
  | { do: 'wait'; ms: number }
  /** Pause until `atMs` after stream start. */
  | { do: 'wait-until'; atMs: number }
  /**
   * Wait for the bot's audio to start playing, then `thenMs` more (default 0). If the bot is
   * playing when the step starts, its current reply counts, so "barge in 600 ms into the reply"
   * works whether or not the reply has already begun. With `sinceLastClip`, bot audio that began
   * after the last clip started counts too (see below).
   */
  | { do: 'wait-bot-audio'; thenMs?: number; timeoutMs?: number; sinceLastClip?: boolean }
  /**
   * Wait until the bot has played some audio (during this step, or was playing when it started)
   * and then been quiet for `ms`: the greeting is over, or the reply has ended. Right after a
   * wait-bot-audio that gave up, with the bot still silent, it ends at once: the bot has been
   * quiet all along, and there is no audio whose end to wait for (a callee who joined after the
   * greeting speaks first rather than sit out a second timeout). With
   * `sinceLastClip`, audio the bot began after the last clip started counts too: a bot may answer
   * in the clip's trailing silence, as soon as it hears the speech end, and be done by the time the
   * clip's last frame has gone; without it the step would wait for a reply that already came.
   */
  | { do: 'wait-bot-silence'; ms: number; timeoutMs?: number; sinceLastClip?: boolean }
  /** Play a clip (by name, from the call's clips); the step ends with the clip's last frame. */
  | { do: 'play'; clip: string }
  /** Key presses, one `dtmf` message per digit. */
  | { do: 'dtmf'; digits: string }
  /** Send `stop` and close the socket. */
  | { do: 'hangup' };

/** A clip on disk, for scenario files: .wav (any rate, mono or not) or .ulaw/.raw (8 kHz mu-law). */
export interface ClipSource {
  file: string;
  /** Slice of the file to use; default all of it. */
  startMs?: number;
  durationMs?: number;
  /**
   * Where speech is in the (sliced) clip, for the latency metrics; null for a clip with no speech
   * (noise). Omitted: found from frame energy.
   */
  voiced?: { startMs: number; endMs: number } | null;
}

export interface Scenario {
  steps: CallerStep[];
  /** Clips named by `play` steps, for scenario files; callers of the engine may pass audio directly. */
  clips?: Record<string, ClipSource>;
  /** After the last step: hang up (default), or stay on the line until the server closes. */
  endOfScript?: 'hangup' | 'stay';
  /** Hard limit on the call; the caller hangs up when it is reached. Default 5 minutes. */
  maxDurationMs?: number;
  /** Default timeout of the wait-bot-* steps; on timeout the script moves on. Default 30 s. */
  waitTimeoutMs?: number;
}

export const DEFAULT_MAX_DURATION_MS = 300_000;
export const DEFAULT_WAIT_TIMEOUT_MS = 30_000;

/** A day; anything longer in a scenario is a typo. */
const durationMs = z.number().finite().min(0).max(86_400_000);

const callerStepSchema = z.discriminatedUnion('do', [
  z.object({ do: z.literal('wait'), ms: durationMs }).strict(),
  z.object({ do: z.literal('wait-until'), atMs: durationMs }).strict(),
  z
    .object({
      do: z.literal('wait-bot-audio'),
      thenMs: durationMs.optional(),
      timeoutMs: durationMs.optional(),
      sinceLastClip: z.boolean().optional(),
    })
    .strict(),
  z
    .object({
      do: z.literal('wait-bot-silence'),
      ms: durationMs,
      timeoutMs: durationMs.optional(),
      sinceLastClip: z.boolean().optional(),
    })
    .strict(),
  z.object({ do: z.literal('play'), clip: z.string().min(1).max(200) }).strict(),
  z
    .object({ do: z.literal('dtmf'), digits: z.string().regex(/^[0-9*#A-D]{1,32}$/, 'digits are 0-9, *, #, A-D') })
    .strict(),
  z.object({ do: z.literal('hangup') }).strict(),
]);

const clipSourceSchema = z
  .object({
    file: z.string().min(1),
    startMs: durationMs.optional(),
    durationMs: durationMs.optional(),
    voiced: z.object({ startMs: durationMs, endMs: durationMs }).strict().nullable().optional(),
  })
  .strict();

export const scenarioSchema: z.ZodType<Scenario> = z
  .object({
    steps: z.array(callerStepSchema).max(10_000),
    clips: z.record(z.string().min(1).max(200), clipSourceSchema).optional(),
    endOfScript: z.enum(['hangup', 'stay']).optional(),
    maxDurationMs: durationMs.optional(),
    waitTimeoutMs: durationMs.optional(),
  })
  .strict();

/** Validates a scenario (e.g. parsed from a JSON file); throws an Error listing what is wrong. */
export function parseScenario(input: unknown): Scenario {
  const result = scenarioSchema.safeParse(input);
  if (!result.success) throw new Error(`invalid scenario:\n${z.prettifyError(result.error)}`);
  return result.data;
}

/** Names of the clips the steps play, so missing audio is caught before dialling. */
export function clipsPlayedBy(scenario: Scenario): Set<string> {
  const names = new Set<string>();
  for (const step of scenario.steps) if (step.do === 'play') names.add(step.clip);
  return names;
}
