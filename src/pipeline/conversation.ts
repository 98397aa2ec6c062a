import type { ChatMessage } from '../bots/bot-config-schema.js';
import type { LlmMessage } from '../providers/types.js';

/** Text of a config message whose content is a string or a list of `{type:"text", text}` parts. */
export function messageText(message: ChatMessage): string {
  if (typeof message.content === 'string') return message.content;
  return message.content
    .map((part) => (typeof part.text === 'string' ? part.text : ''))
    .filter((text) => text.length > 0)
    .join('\n');
}

/** Where each spoken piece of a reply starts and ends in the reply's audio. */
interface SpokenPiece {
  text: string;
  startMs: number;
  endMs: number;
}

/**
 * The LLM context of a call: the initial messages, then user turns and the bot's replies. A reply
 * that is interrupted is cut to what the caller actually heard, so the model remembers the call
 * as it happened.
 */
export class Conversation {
  readonly messages: LlmMessage[];
  private replyIndex = -1;
  private pieces: SpokenPiece[] = [];

  constructor(initial: ChatMessage[]) {
    this.messages = initial.map((m) => ({
      role: m.role === 'developer' ? 'system' : m.role,
      content: messageText(m),
    }));
  }

  addUser(text: string): void {
    const last = this.messages.at(-1);
    // Two user turns in a row (the bot's reply was cut before any audio) read as one.
    if (last?.role === 'user' && this.replyIndex < 0) last.content = `${last.content} ${text}`;
    else this.messages.push({ role: 'user', content: text });
    this.replyIndex = -1;
  }

  /** Starts the assistant message of a new reply. */
  beginReply(): void {
    this.messages.push({ role: 'assistant', content: '' });
    this.replyIndex = this.messages.length - 1;
    this.pieces = [];
  }

  /** Text the LLM produced (kept even if not spoken yet; cut on interruption). */
  appendReplyText(text: string): void {
    const message = this.replyIndex >= 0 ? this.messages[this.replyIndex] : undefined;
    if (message) message.content += text;
  }

  /** A piece of the reply was synthesised and occupies [startMs, endMs) of the reply's audio. */
  notePiece(text: string, startMs: number, endMs: number): void {
    this.pieces.push({ text, startMs, endMs });
  }

  /** The reply is finished (played in full); its message stays as generated. */
  endReply(): void {
    this.dropEmptyReply();
    this.replyIndex = -1;
  }

  /**
   * The caller interrupted after hearing `heardMs` of the reply: keep whole pieces heard, and of
   * the piece playing at that moment the share of words matching the share of its audio.
   */
  truncateReply(heardMs: number): string {
    const message = this.replyIndex >= 0 ? this.messages[this.replyIndex] : undefined;
    if (!message) return '';
    const kept: string[] = [];
    for (const piece of this.pieces) {
      if (piece.endMs <= heardMs) {
        kept.push(piece.text);
        continue;
      }
      if (piece.startMs < heardMs) {
        const words = piece.text.split(/\s+/);
        const share = (heardMs - piece.startMs) / Math.max(1, piece.endMs - piece.startMs);
        const count = Math.floor(words.length * share);
        if (count > 0) kept.push(`${words.slice(0, count).join(' ')}…`);
      }
      break;
    }
    message.content = kept.join(' ');
    this.dropEmptyReply();
    this.replyIndex = -1;
    return message.content;
  }

  private dropEmptyReply(): void {
    const message = this.replyIndex >= 0 ? this.messages[this.replyIndex] : undefined;
    if (message && message.content.trim().length === 0) this.messages.splice(this.replyIndex, 1);
  }
}
