import type { Logger } from 'pino';
import { DEFAULT_TOOL_TIMEOUT_SECS, webhookToolFor } from '../functions/index.js';
import { openAiToolFunction } from '../providers/tool-schemas.js';
import type { LlmToolCall } from '../providers/types.js';
import type { CallMetrics } from './call-metrics.js';
import { type ToolAction, type ToolCallResult, type ToolHandler, errorResult } from './tool-types.js';

/** Functions Switchboard answers itself, offered to the model when the llm `tools` list names them. */
export const BUILT_IN_TOOLS = ['end_call', 'transfer_call', 'send_dtmf'] as const;
export type BuiltInTool = (typeof BUILT_IN_TOOLS)[number];

/** A function without its own `timeout_secs` gets this long to answer, ms. */
export const DEFAULT_TOOL_TIMEOUT_MS = DEFAULT_TOOL_TIMEOUT_SECS * 1000;
/** send_dtmf's time limit, ms: the sentence before the keys, then up to 32 keys of 200 ms and their waits. */
const SEND_DTMF_TIMEOUT_MS = 30_000;
/** Model passes with function calls one reply may make before the model must answer (llm option `max_tool_rounds`). */
export const DEFAULT_MAX_TOOL_ROUNDS = 5;

/** The JSON schemas of the built-ins, in OpenAI's function format. */
const BUILT_IN_SCHEMAS: Record<BuiltInTool, Record<string, unknown>> = {
  end_call: {
    type: 'function',
    function: {
      name: 'end_call',
      description:
        'Ends the phone call. Call it once the conversation is over (the caller said goodbye or asked to hang up); say goodbye in the same answer.',
      parameters: { type: 'object', properties: {} },
    },
  },
  transfer_call: {
    type: 'function',
    function: {
      name: 'transfer_call',
      description:
        'Transfers the caller to another phone number or SIP address (a cold transfer: the bot leaves the call). Tell the caller first.',
      parameters: {
        type: 'object',
        properties: {
          target: { type: 'string', description: 'An E.164 phone number (+15551234567) or a sip: address.' },
        },
        required: ['target'],
      },
    },
  },
  send_dtmf: {
    type: 'function',
    function: {
      name: 'send_dtmf',
      description: 'Presses keys on the phone keypad, to navigate the menu of the called party.',
      parameters: {
        type: 'object',
        properties: { digits: { type: 'string', description: 'Keys to press: 0-9, * and #.' } },
        required: ['digits'],
      },
    },
  },
};

/** How one function is answered, from `webhook_tools` or the built-ins. */
export interface ToolSpec {
  name: string;
  kind: 'webhook' | 'built-in' | 'client';
  /** The filler phrase while it runs (the entry's `say`). */
  say?: string;
  /** It plays audio of its own (send_dtmf's tones): no filler phrase over it, however long it takes. */
  noFiller?: boolean;
  timeoutMs: number;
  /** A barge-in cancels it (the entry's `cancel_on_interruption`); by default it runs on. */
  cancelOnInterruption: boolean;
  /** The `webhook_tools` entry, for a webhook. */
  webhook?: Record<string, unknown>;
}

export interface CallToolsConfig {
  /** The llm `tools` option as configured. */
  tools: Array<Record<string, unknown> | string> | undefined;
  webhookTools: Record<string, Record<string, unknown>> | undefined;
}

export interface CallToolsDeps {
  /** Runs a `webhook_tools` entry (the webhook runner); without it webhook tools answer with an error. */
  webhook?: (name: string, entry: Record<string, unknown>) => ToolHandler | undefined;
  /** The built-ins this call can carry out (a room cannot transfer, only dial-out sends keys). */
  builtIn(name: BuiltInTool): ToolHandler | undefined;
  /** The room's client, for functions neither webhook nor built in (rooms only). */
  client?: ToolHandler;
  metrics: CallMetrics;
  /** Each call's start and end as a mark towards the carrier (`tool:<name>:started`, then `:ok`, `:error`…). */
  signal?(name: string): void;
  log: () => Logger;
  /** Aborted when the call ends: every function of the call stops then. */
  callSignal: AbortSignal;
}

/** A function call under way: its spec, and its result when it comes (never rejects). */
export interface RunningTool {
  call: LlmToolCall;
  spec: ToolSpec | undefined;
  result: Promise<ToolCallResult>;
  /** The same tool_call_id was asked for before: this is that run, not a new one. */
  repeated: boolean;
}

/**
 * The functions of one call: which the model is offered, how each is answered, and each
 * tool_call_id run at most once, with its timeout, cancellation and figures.
 */
export class CallTools {
  readonly offered: Array<Record<string, unknown>>;
  private readonly specs = new Map<string, ToolSpec>();
  private readonly runs = new Map<string, RunningTool>();

  constructor(
    config: CallToolsConfig,
    private readonly deps: CallToolsDeps,
  ) {
    this.offered = [];
    for (const entry of config.tools ?? []) {
      const name = toolName(entry);
      if (name && isBuiltIn(name) && isBareName(entry)) {
        this.offered.push(BUILT_IN_SCHEMAS[name]);
        this.specs.set(name, {
          name,
          kind: 'built-in',
          // 32 keys of tones, after the bot's sentence before them, take longer than a webhook should.
          timeoutMs: name === 'send_dtmf' ? SEND_DTMF_TIMEOUT_MS : DEFAULT_TOOL_TIMEOUT_MS,
          cancelOnInterruption: false,
          noFiller: name === 'send_dtmf',
        });
        continue;
      }
      if (typeof entry === 'string') continue;
      this.offered.push(entry);
      if (!name) continue;
      const webhook = webhookToolFor(config.webhookTools, name);
      this.specs.set(name, webhook ? webhookSpec(name, webhook) : clientSpec(name));
    }
  }

  get any(): boolean {
    return this.offered.length > 0;
  }

  spec(name: string): ToolSpec | undefined {
    return this.specs.get(name);
  }

  /**
   * Runs `call` unless its tool_call_id ran already (then its first run is returned, so no side
   * effect happens twice). `replySignal` ends with the reply: it cancels only a function that
   * cancels on interruption.
   */
  run(call: LlmToolCall, replySignal: AbortSignal, onAction: (action: ToolAction) => void): RunningTool {
    const earlier = this.runs.get(call.id);
    if (earlier) return { ...earlier, repeated: true };
    const spec = this.specs.get(call.name);
    const running: RunningTool = {
      call,
      spec,
      result: this.execute(call, spec, replySignal, onAction),
      repeated: false,
    };
    this.runs.set(call.id, running);
    return running;
  }

  private async execute(
    call: LlmToolCall,
    spec: ToolSpec | undefined,
    replySignal: AbortSignal,
    onAction: (action: ToolAction) => void,
  ): Promise<ToolCallResult> {
    // On the call's clock, as its timeout: the time the caller waits for the function.
    const { clock } = this.deps.metrics;
    const startedAtMs = clock.now();
    this.deps.signal?.(`tool:${call.name}:started`);
    const handler = spec ? this.handlerFor(spec) : undefined;
    let result: ToolCallResult;
    if (!spec || !handler) {
      result = errorResult('error', `There is no function named ${call.name} on this call.`);
    } else {
      result = await this.runHandler(call, spec, handler, replySignal, onAction);
    }
    const latencyMs = Math.round(clock.now() - startedAtMs);
    this.deps.metrics.toolCalled(call.name, result.outcome, latencyMs);
    this.deps.signal?.(`tool:${call.name}:${result.outcome}`);
    const log = this.deps.log();
    const fields = { tool: call.name, toolCallId: call.id, outcome: result.outcome, latencyMs };
    if (result.outcome === 'ok') log.info(fields, 'function call answered');
    else log.warn({ ...fields, result: result.resultJson.slice(0, 300) }, 'function call failed');
    return result;
  }

  private handlerFor(spec: ToolSpec): ToolHandler | undefined {
    if (spec.kind === 'built-in') return this.deps.builtIn(spec.name as BuiltInTool);
    if (spec.kind === 'webhook') return spec.webhook && this.deps.webhook?.(spec.name, spec.webhook);
    return this.deps.client;
  }

  /** The handler's result, or a timed-out or cancelled one, whichever comes first. */
  private runHandler(
    call: LlmToolCall,
    spec: ToolSpec,
    handler: ToolHandler,
    replySignal: AbortSignal,
    onAction: (action: ToolAction) => void,
  ): Promise<ToolCallResult> {
    const own = new AbortController();
    const stops = [this.deps.callSignal, own.signal, ...(spec.cancelOnInterruption ? [replySignal] : [])];
    const signal = AbortSignal.any(stops);
    // The call's clock: a function's timeout is how long the caller may be kept waiting.
    const { clock } = this.deps.metrics;
    return new Promise<ToolCallResult>((resolve) => {
      let settled = false;
      const settle = (result: ToolCallResult) => {
        if (settled) return;
        settled = true;
        clock.clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        if (result.outcome !== 'ok') own.abort();
        resolve(result);
      };
      const timer = clock.setTimeout(
        () => settle(errorResult('timeout', `${spec.name} did not answer within ${spec.timeoutMs / 1000} s.`)),
        spec.timeoutMs,
      );
      const onAbort = () =>
        settle(
          errorResult(
            'cancelled',
            this.deps.callSignal.aborted ? 'The call ended.' : `${spec.name} was cancelled: the caller interrupted.`,
          ),
        );
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
      handler
        .run(call, {
          signal,
          timeoutMs: spec.timeoutMs,
          onAction: (action) => {
            if (!settled) onAction(action);
          },
        })
        .then(settle, (err: unknown) =>
          settle(errorResult('error', `${spec.name} failed: ${err instanceof Error ? err.message : String(err)}`)),
        );
    });
  }
}

function isBuiltIn(name: string): name is BuiltInTool {
  return (BUILT_IN_TOOLS as readonly string[]).includes(name);
}

/** A function's name, whatever the entry's shape: a bare name, OpenAI's, or Anthropic's `{name, input_schema}`. */
export function toolName(entry: Record<string, unknown> | string): string | undefined {
  if (typeof entry === 'string') return entry;
  const fn = openAiToolFunction(entry);
  if (fn) return fn.name;
  return typeof entry.name === 'string' ? entry.name : undefined;
}

/** A built-in is named without a schema of its own: `"end_call"` or `{type:"function", function:{name:"end_call"}}`. */
function isBareName(entry: Record<string, unknown> | string): boolean {
  if (typeof entry === 'string') return true;
  const fn = openAiToolFunction(entry);
  return fn ? fn.parameters === undefined : entry.input_schema === undefined && entry.parameters === undefined;
}

function webhookSpec(name: string, entry: Record<string, unknown>): ToolSpec {
  return {
    name,
    kind: 'webhook',
    say: typeof entry.say === 'string' && entry.say.trim() ? entry.say : undefined,
    timeoutMs: typeof entry.timeout_secs === 'number' ? entry.timeout_secs * 1000 : DEFAULT_TOOL_TIMEOUT_MS,
    cancelOnInterruption: entry.cancel_on_interruption === true,
    webhook: entry,
  };
}

function clientSpec(name: string): ToolSpec {
  return { name, kind: 'client', timeoutMs: DEFAULT_TOOL_TIMEOUT_MS, cancelOnInterruption: false };
}
