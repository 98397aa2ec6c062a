import type { BuiltInTool } from './call-tools.js';
import { type ToolCallResult, type ToolHandler, errorResult } from './tool-types.js';

/** What the built-in functions need from the call that runs them. */
export interface BuiltInHost {
  /**
   * The call ends once the answer the model is giving has played (its goodbye included); `then`
   * replaces the hang-up. False when the call was already ending or the answer was cut off.
   */
  endAfterAnswer(reason: string, then?: () => void): boolean;
  /** Hands the caller to `target` at the carrier; undefined where a call cannot be transferred (rooms). */
  transfer: { refusal(target: string): string | undefined; start(target: string): void } | undefined;
  /** Presses keys towards the called party; undefined on calls that did not dial out. */
  sendDigits: ((digits: string) => Promise<void>) | undefined;
}

/** E.164, or a SIP address (`sip:user@host`). */
const TRANSFER_TARGET = /^(\+[1-9]\d{6,14}|sips?:[^\s@]+@[^\s]+)$/;
const DTMF_DIGITS = /^[0-9*#wW]{1,32}$/;

function ok(status: Record<string, unknown>): ToolCallResult {
  return { outcome: 'ok', resultJson: JSON.stringify(status) };
}

function argumentsOf(argumentsJson: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(argumentsJson || '{}');
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The handler of a built-in on this call, or undefined when the call cannot carry it out. */
export function builtInTool(name: BuiltInTool, host: BuiltInHost): ToolHandler | undefined {
  switch (name) {
    case 'end_call':
      return {
        run: async () => {
          if (!host.endAfterAnswer('end_call')) return errorResult('cancelled', 'The call is already ending.');
          return ok({ status: 'The call ends once you have said goodbye; say it now, briefly.' });
        },
      };
    case 'transfer_call': {
      const transfer = host.transfer;
      if (!transfer) return undefined;
      return {
        run: async (call) => {
          const target = argumentsOf(call.argumentsJson).target;
          if (typeof target !== 'string' || !TRANSFER_TARGET.test(target.trim()))
            return errorResult('error', 'target must be an E.164 phone number (+15551234567) or a sip: address.');
          const refusal = transfer.refusal(target.trim());
          if (refusal) return errorResult('error', `The call cannot be transferred there: ${refusal}`);
          if (!host.endAfterAnswer('transferred', () => transfer.start(target.trim())))
            return errorResult('cancelled', 'The call is already ending.');
          return ok({
            status: `The caller is transferred to ${target.trim()} once you have finished speaking; tell them briefly.`,
          });
        },
      };
    }
    case 'send_dtmf': {
      const sendDigits = host.sendDigits;
      if (!sendDigits) return undefined;
      return {
        run: async (call) => {
          const digits = argumentsOf(call.argumentsJson).digits;
          if (typeof digits !== 'string' || !DTMF_DIGITS.test(digits))
            return errorResult('error', 'digits must be 1 to 32 of 0-9, * and #.');
          await sendDigits(digits);
          return ok({ sent: digits });
        },
      };
    }
  }
}
