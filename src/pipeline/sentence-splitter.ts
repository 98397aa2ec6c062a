/**
 * Cuts a streamed LLM reply into pieces worth sending to TTS: whole sentences as soon as they
 * end, so the first one can be spoken while the rest is still being generated. Very long
 * sentences are cut at a comma or space so speech does not wait on them.
 */
const SENTENCE_END = /[.!?…。！？]["'”’)\]]*\s/;
const CLAUSE_BREAK = /[,;:–—]\s/g;
const WORD_BREAK = /\s/g;
const ABBREVIATIONS = /\b(?:Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|vs|etc|e\.g|i\.e|No)\.\s$/i;

export class SentenceSplitter {
  private buffer = '';

  constructor(private readonly maxChars = 240) {}

  /** Adds text; returns the sentences completed by it. */
  push(text: string): string[] {
    this.buffer += text;
    const out: string[] = [];
    for (;;) {
      const piece = this.nextPiece();
      if (piece === undefined) break;
      out.push(piece);
    }
    return out;
  }

  /** What is left at the end of the reply. */
  flush(): string | undefined {
    const rest = this.buffer.trim();
    this.buffer = '';
    return rest.length > 0 ? rest : undefined;
  }

  private nextPiece(): string | undefined {
    let searchFrom = 0;
    for (;;) {
      const match = SENTENCE_END.exec(this.buffer.slice(searchFrom));
      if (!match) break;
      const end = searchFrom + match.index + match[0].length;
      if (ABBREVIATIONS.test(this.buffer.slice(0, end))) {
        searchFrom = end;
        continue;
      }
      return this.take(end);
    }
    if (this.buffer.length > this.maxChars) {
      const head = this.buffer.slice(0, this.maxChars);
      const cut = lastBreak(head, CLAUSE_BREAK) ?? lastBreak(head, WORD_BREAK) ?? this.maxChars;
      return this.take(cut);
    }
    return undefined;
  }

  private take(end: number): string | undefined {
    const piece = this.buffer.slice(0, end).trim();
    this.buffer = this.buffer.slice(end);
    return piece.length > 0 ? piece : this.nextPiece();
  }
}

function lastBreak(text: string, pattern: RegExp): number | undefined {
  let end: number | undefined;
  for (const m of text.matchAll(pattern)) end = m.index + m[0].length;
  return end;
}
