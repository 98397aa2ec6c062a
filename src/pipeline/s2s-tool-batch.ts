import type { Logger } from 'pino';
import type { LlmToolCall } from '../providers/types.js';
import type { CallTools, RunningTool } from './call-tools.js';

/**
 * Function calls of a speech-to-speech model: the vendor reports each call as it completes; they
 * run concurrently (each tool_call_id once), and their results go back together once every call
 * of the batch has answered, so the model answers once, after all of them. A barge-in aborts the
 * calls that cancel on interruption (their result says so); the others run on.
 */
export class S2sToolBatch {
  private batch: RunningTool[] = [];
  private interruption = new AbortController();

  constructor(
    private readonly tools: CallTools,
    private readonly send: (results: Array<{ call: LlmToolCall; resultJson: string }>) => void,
    private readonly log: () => Logger,
  ) {}

  onToolCall(call: LlmToolCall): void {
    const run = this.tools.run(call, this.interruption.signal, (action) =>
      this.log().info({ tool: call.name, action: action.type }, 'streamed action not carried out on speech-to-speech'),
    );
    if (run.repeated) return;
    this.batch.push(run);
    void run.result.then(() => this.flushIfAnswered());
  }

  /** The caller barged in: calls that cancel on interruption stop now. */
  interrupt(): void {
    this.interruption.abort();
    this.interruption = new AbortController();
  }

  private async flushIfAnswered(): Promise<void> {
    const batch = this.batch;
    const settled = await Promise.all(batch.map((run) => Promise.race([run.result, Promise.resolve(undefined)])));
    if (batch !== this.batch || settled.some((result) => result === undefined)) return;
    this.batch = [];
    this.send(batch.map((run, i) => ({ call: run.call, resultJson: settled[i]!.resultJson })));
  }
}
