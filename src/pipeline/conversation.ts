import type { ChatMessage } from '../bots/bot-config-schema.js';
import type { LlmMessage, LlmToolCall } from '../providers/types.js';

/** Text of a config message whose content is a string or a list of `{type:"text", text}` parts. */
export function messageText(message: ChatMessage): string {
  if (typeof message.content === 'string') return message.content;
  return message.content
    .map((part) => (typeof part.text === 'string' ? part.text : ''))
    .filter((text) => text.length > 0)
    .join('\n');
}

/** Words of a reply the voice reported spoken, and where they lie in the reply's audio. */
interface SpokenSpan {
  words: string[];
  startMs: number;
  endMs: number;
}

/**
 * The pace assumed for the sentence being spoken until the call's voice has shown its own: about
 * 15 characters a second, usual for synthetic speech.
 */
export const DEFAULT_MS_PER_CHAR = 65;

/**
 * The LLM context of a call: the initial messages, then user turns and the bot's replies. A reply
 * that is interrupted is cut to what the caller actually heard, so the model remembers the call
 * as it happened.
 *
 * A reply that calls functions spans several assistant messages (its segments): each model pass
 * writes one, the functions it called hang on it, and their `tool` messages follow it at once,
 * holding a placeholder until each result arrives (results may arrive after the reply ended). So
 * every function call in the context always has its answer right behind it, whatever cut the
 * reply, as every vendor demands.
 */
export class Conversation {
  readonly messages: LlmMessage[];
  /** The assistant messages of the current reply, oldest first; empty between replies. */
  private replyIndices: number[] = [];
  /** The words of each piece (sentence) of the current reply handed to the voice, in order. */
  private sentences: string[][] = [];
  /** What the voice reported spoken of the current reply, in order. */
  private spans: SpokenSpan[] = [];
  /** The voice's pace on this call so far, from reported spans: their audio and characters. */
  private spokenMs = 0;
  private spokenChars = 0;

  constructor(initial: ChatMessage[]) {
    this.messages = initial.map((m) => ({
      role: m.role === 'developer' ? 'system' : m.role,
      content: messageText(m),
    }));
  }

  addUser(text: string): void {
    const last = this.messages.at(-1);
    // Two user turns in a row (the caller heard nothing of the reply between them) read as one.
    if (last?.role === 'user' && this.replyIndices.length === 0) last.content = `${last.content} ${text}`;
    else this.messages.push({ role: 'user', content: text });
    this.replyIndices = [];
  }

  /** Starts the assistant message of a new reply. */
  beginReply(): void {
    this.messages.push({ role: 'assistant', content: '' });
    this.replyIndices = [this.messages.length - 1];
    this.sentences = [];
    this.spans = [];
  }

  /** Text the LLM produced (kept even if not spoken yet; cut on interruption). */
  appendReplyText(text: string): void {
    const message = this.currentSegment();
    if (message) message.content += text;
  }

  /** A phrase of the bot's own inside the reply (a filler while functions run), after its text so far. */
  appendReplyPhrase(text: string): void {
    const message = this.currentSegment();
    if (!message) return;
    message.content =
      message.content && !/\s$/.test(message.content) ? `${message.content} ${text}` : message.content + text;
  }

  /**
   * The reply's current model pass called `calls`: they hang on its message, each followed by a
   * `tool` message holding `placeholderJson` until setToolResult answers it.
   */
  addToolCalls(calls: LlmToolCall[], placeholderJson: string): void {
    const message = this.currentSegment();
    if (!message || calls.length === 0) return;
    message.toolCalls = [...(message.toolCalls ?? []), ...calls];
    for (const call of calls)
      this.messages.push({ role: 'tool', content: placeholderJson, toolCallId: call.id, toolName: call.name });
  }

  /** A function's result arrived (during its reply or after): it replaces the placeholder. */
  setToolResult(toolCallId: string, resultJson: string): void {
    const message = this.messages.findLast((m) => m.role === 'tool' && m.toolCallId === toolCallId);
    if (message) message.content = resultJson;
  }

  /** The reply's next model pass (after its functions answered) writes a new assistant message. */
  continueReply(): void {
    if (this.replyIndices.length === 0) return;
    this.messages.push({ role: 'assistant', content: '' });
    this.replyIndices.push(this.messages.length - 1);
  }

  /** A piece (a sentence) of the reply was handed to the voice. */
  notePieceQueued(text: string): void {
    const pieceWords = wordsOf(text);
    if (pieceWords.length > 0) this.sentences.push(pieceWords);
  }

  /**
   * The voice reported `text` (the next words of the reply, a sentence or fewer) spoken: it
   * occupies [startMs, endMs) of the reply's audio.
   */
  notePiece(text: string, startMs: number, endMs: number): void {
    const spanWords = wordsOf(text);
    if (spanWords.length === 0) return;
    this.spans.push({ words: spanWords, startMs, endMs });
    if (endMs > startMs) {
      this.spokenMs += endMs - startMs;
      this.spokenChars += spanWords.join(' ').length;
    }
  }

  /** The reply is finished (played in full); its message stays as generated. */
  endReply(): void {
    this.dropEmptyReply();
    this.replyIndices = [];
  }

  /**
   * The caller interrupted after hearing `heardMs` of the reply, of which `producedMs` had been
   * synthesised. Keeps the words heard: spans the voice reported count whole when heard to their
   * end; within a span, and in the sentence still being spoken (whose length in time is not known
   * yet: the larger of the audio produced for it and its characters at the voice's pace), words
   * count by their share of the characters, to the nearest word boundary. A reply of which the
   * caller heard no word is dropped, so the caller's next words join their previous turn.
   */
  truncateReply(heardMs: number, producedMs = heardMs): string {
    const segments = this.replyIndices.map((index) => this.messages[index]!);
    if (segments.length === 0) return '';
    const kept: string[] = [];
    let reportedWords = 0;
    let reportedEndMs = 0;
    let cut = false;
    for (const span of this.spans) {
      if (span.endMs <= heardMs) {
        kept.push(...span.words);
        reportedWords += span.words.length;
        reportedEndMs = span.endMs;
        continue;
      }
      if (span.startMs < heardMs)
        kept.push(...wordsHeard(span.words, (heardMs - span.startMs) / Math.max(1, span.endMs - span.startMs)));
      cut = true;
      break;
    }
    if (!cut && heardMs > reportedEndMs) {
      const inFlight = this.sentenceAfter(reportedWords);
      const estimatedMs = Math.max(producedMs - reportedEndMs, inFlight.join(' ').length * this.msPerChar());
      kept.push(...wordsHeard(inFlight, (heardMs - reportedEndMs) / Math.max(1, estimatedMs)));
    }
    // The heard words fill the reply's messages in order; the ellipsis tells the model where it was cut off.
    let left = kept.length;
    const keptTexts: string[] = [];
    for (const message of segments) {
      const generated = wordsOf(message.content);
      const take = Math.min(left, generated.length);
      left -= take;
      const text = generated.slice(0, take).join(' ');
      message.content = text.length > 0 && take < generated.length ? `${text}…` : text;
      if (message.content.length > 0) keptTexts.push(message.content);
    }
    this.dropEmptyReply();
    this.replyIndices = [];
    return keptTexts.join(' ');
  }

  /** The rest of the sentence that holds the reply's word number `wordIndex` (0-based). */
  private sentenceAfter(wordIndex: number): string[] {
    let start = 0;
    for (const sentence of this.sentences) {
      if (wordIndex < start + sentence.length) return sentence.slice(wordIndex - start);
      start += sentence.length;
    }
    return [];
  }

  private msPerChar(): number {
    return this.spokenChars > 0 ? this.spokenMs / this.spokenChars : DEFAULT_MS_PER_CHAR;
  }

  private currentSegment(): LlmMessage | undefined {
    const index = this.replyIndices.at(-1);
    return index === undefined ? undefined : this.messages[index];
  }

  /** Drops the reply's messages that hold nothing: no word heard and no function called. */
  private dropEmptyReply(): void {
    for (const index of [...this.replyIndices].reverse()) {
      const message = this.messages[index]!;
      if (message.content.trim().length === 0 && !message.toolCalls?.length) this.messages.splice(index, 1);
    }
  }
}

function wordsOf(text: string): string[] {
  const trimmed = text.trim();
  return trimmed.length === 0 ? [] : trimmed.split(/\s+/);
}

/**
 * The words heard when `share` (0..1) of their speech was: those whose middle character falls
 * within that share of the characters, so no word is cut and none more than half unheard is kept.
 */
function wordsHeard(words: string[], share: number): string[] {
  const heardChars = Math.max(0, Math.min(1, share)) * words.join(' ').length;
  let position = 0;
  let count = 0;
  for (const word of words) {
    if (position + word.length / 2 > heardChars) break;
    count += 1;
    position += word.length + 1;
  }
  return words.slice(0, count);
}
