import type { Logger } from 'pino';
import type { Clock, ClockTimer } from '../shared/clock.js';
import type { LlmMessage, LlmToolCall } from '../providers/types.js';
import type { CallTools, RunningTool } from './call-tools.js';
import { DEFAULT_FILLER, FILLER_AFTER_MS } from './model-rounds.js';
import type { ToolAction } from './tool-types.js';

/** What a batch of function calls does to the call around it. */
export interface S2sToolHost {
  /** The results of a whole batch, back to the vendor together. */
  send(results: Array<{ call: LlmToolCall; resultJson: string }>): void;
  /** Says a phrase to the caller while the functions run (the filler, a webhook's `tts:say`). */
  say(text: string): void;
  /** A webhook's `llm:append_to_messages`: into the vendor's context. */
  append(messages: LlmMessage[]): void;
  /** A webhook's end-the-call action: the call ends after the model's next answer. */
  endCall(): void;
  log(): Logger;
}

/**
 * Function calls of a speech-to-speech model: the vendor reports each call as it completes; they
 * run concurrently (each tool_call_id once), and their results go back together once every call
 * of the batch has answered, so the model answers once, after all of them. As on the pipeline
 * (model-rounds.ts): a batch slower than FILLER_AFTER_MS gets the filler phrase once (the tool's
 * `say`, else the default) unless a webhook spoke first, and streaming webhooks' actions are
 * carried out as they arrive. A barge-in aborts the calls that cancel on interruption (their
 * result says so); the others run on, their results still sent, but what they ask to say or do
 * after the caller spoke over them is dropped, as a cut reply's are.
 */
export class S2sToolBatch {
  private batch: RunningTool[] = [];
  /** The signal of the calls made since the last barge-in; made with the first of them. */
  private interruption: AbortController | undefined;
  /** Counts barge-ins: actions of calls made before the latest one are stale. */
  private epoch = 0;
  private fillerTimer: ClockTimer | undefined;
  /** The current batch has said something (its filler or a webhook's phrase). */
  private spoke = false;

  constructor(
    private readonly tools: CallTools,
    private readonly host: S2sToolHost,
    /** The call's: the filler is about the silence the caller hears. */
    private readonly clock: Clock,
  ) {}

  onToolCall(call: LlmToolCall): void {
    const epoch = this.epoch;
    this.interruption ??= new AbortController();
    const run = this.tools.run(call, this.interruption.signal, (action) => this.onAction(call, action, epoch));
    if (run.repeated) return;
    if (this.batch.length === 0) {
      this.spoke = false;
      this.clock.clearTimeout(this.fillerTimer);
      this.fillerTimer = this.clock.setTimeout(() => this.sayFiller(), FILLER_AFTER_MS);
    }
    this.batch.push(run);
    void run.result.then(() => this.flushIfAnswered());
  }

  /** The caller barged in: calls that cancel on interruption stop now, and no filler follows. */
  interrupt(): void {
    this.epoch += 1;
    this.clock.clearTimeout(this.fillerTimer);
    // Most barge-ins cut a reply with no function call behind it: no signal to abort. (An abort
    // makes its reason, a DOMException with a stack trace: a third of interrupt()'s time in a profile.)
    this.interruption?.abort();
    this.interruption = undefined;
  }

  dispose(): void {
    this.clock.clearTimeout(this.fillerTimer);
  }

  private sayFiller(): void {
    const batch = this.batch;
    if (this.spoke || batch.length === 0 || batch.every((run) => run.spec?.noFiller)) return;
    this.spoke = true;
    this.host.say(batch.find((run) => run.spec?.say)?.spec?.say ?? DEFAULT_FILLER);
  }

  private onAction(call: LlmToolCall, action: ToolAction, epoch: number): void {
    if (epoch !== this.epoch) {
      this.host.log().info({ tool: call.name, action: action.type }, 'streamed action after a barge-in, dropped');
      return;
    }
    if (action.type === 'say') {
      // The webhook speaks for itself: no filler on top.
      this.spoke = true;
      this.host.say(action.text);
    } else if (action.type === 'append') this.host.append(action.messages);
    else this.host.endCall();
  }

  private async flushIfAnswered(): Promise<void> {
    const batch = this.batch;
    const settled = await Promise.all(batch.map((run) => Promise.race([run.result, Promise.resolve(undefined)])));
    if (batch !== this.batch || settled.some((result) => result === undefined)) return;
    this.batch = [];
    this.clock.clearTimeout(this.fillerTimer);
    this.host.send(batch.map((run, i) => ({ call: run.call, resultJson: settled[i]!.resultJson })));
  }
}
