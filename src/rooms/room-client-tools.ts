import type { Logger } from 'pino';
import type { LlmToolCall } from '../providers/types.js';
import { errorResult, type ToolCallResult, type ToolHandler, type ToolRunOptions } from '../pipeline/tool-types.js';
import type { FunctionCallResultMessage } from './room-messages.js';
import { serverMessage } from './room-messages.js';

/**
 * Largest function result a room client may hand back, in bytes of JSON. The socket refuses
 * messages over 64 KiB outright; below that, a result this large would crowd the model's context,
 * so it becomes an error result the model can explain instead.
 */
export const MAX_CLIENT_RESULT_BYTES = 32 * 1024;

/** The client a function call is asked of: a ready browser participant of the room. */
export interface FunctionCallClient {
  send(message: string): void;
}

interface PendingCall {
  client: FunctionCallClient;
  name: string;
  resolve(result: ToolCallResult): void;
}

/**
 * Answers the functions that are neither webhooks nor built in by asking the room's client over
 * RTVI: `llm-function-call` goes to one client (the first to join of those still here, so a side
 * effect runs once), and its `llm-function-call-result` for the same tool_call_id becomes the
 * result. The call's own timeout and cancellation stop the wait (CallTools); a client that
 * leaves answers its calls with a cancelled result.
 */
export class RoomClientTools implements ToolHandler {
  private readonly pending = new Map<string, PendingCall>();

  constructor(
    /** The client that answers function calls now, or undefined when no client is ready. */
    private readonly pickClient: () => FunctionCallClient | undefined,
    private readonly log: Logger,
  ) {}

  run(call: LlmToolCall, options: ToolRunOptions): Promise<ToolCallResult> {
    const client = this.pickClient();
    if (!client) {
      return Promise.resolve(
        errorResult('error', `${call.name} needs the room's client, and no client is connected to answer it.`),
      );
    }
    const args = argumentsObject(call.argumentsJson);
    if (!args) {
      // Nothing is sent: the client could only fail, and the model can correct itself.
      return Promise.resolve(
        errorResult('error', `${call.name} was not called: its arguments were not a JSON object.`),
      );
    }
    if (this.pending.has(call.id)) {
      return Promise.resolve(errorResult('error', `${call.name} was asked twice with the same tool_call_id.`));
    }
    return new Promise<ToolCallResult>((resolve) => {
      const stop = () => this.pending.delete(call.id);
      options.signal.addEventListener('abort', stop, { once: true });
      this.pending.set(call.id, {
        client,
        name: call.name,
        resolve: (result) => {
          options.signal.removeEventListener('abort', stop);
          this.pending.delete(call.id);
          resolve(result);
        },
      });
      // The wire of RTVI 1.0 (the version bot-ready announces); the Pipecat client SDK hands it to
      // the handler registered with registerFunctionCallHandler under function_name.
      client.send(serverMessage('llm-function-call', { function_name: call.name, tool_call_id: call.id, args }));
    });
  }

  /** A client's `llm-function-call-result`: the result of the call it was asked, else ignored. */
  onResult(client: FunctionCallClient, message: FunctionCallResultMessage): void {
    const { tool_call_id: toolCallId, function_name: functionName } = message.data;
    const call = this.pending.get(toolCallId);
    if (!call || call.client !== client || call.name !== functionName) {
      this.log.warn(
        { toolCallId, tool: functionName },
        'llm-function-call-result for no function call this client was asked; ignored',
      );
      return;
    }
    const resultJson = JSON.stringify(message.data.result ?? null);
    if (Buffer.byteLength(resultJson) > MAX_CLIENT_RESULT_BYTES) {
      this.log.warn(
        { toolCallId, tool: functionName, bytes: Buffer.byteLength(resultJson), maxBytes: MAX_CLIENT_RESULT_BYTES },
        'client function result too large; refused',
      );
      call.resolve(
        errorResult('error', `${functionName} returned a result larger than ${MAX_CLIENT_RESULT_BYTES} bytes.`),
      );
      return;
    }
    call.resolve({ outcome: 'ok', resultJson });
  }

  /** The client left: what it was asked will not be answered. */
  clientGone(client: FunctionCallClient): void {
    for (const call of [...this.pending.values()]) {
      if (call.client === client)
        call.resolve(errorResult('cancelled', `${call.name} was cancelled: the client left the room.`));
    }
  }
}

/** The model's arguments as the object RTVI carries, or undefined when they are not one. */
function argumentsObject(argumentsJson: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(argumentsJson.trim() || '{}');
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
