/** The reply's words in order, handed out as the vendor confirms they were voiced. */
export class ReplyWords {
  private readonly words: string[] = [];
  private given = 0;

  add(piece: string): void {
    for (const word of piece.split(/\s+/)) if (word) this.words.push(word);
  }

  /** The words up to the `count`-th of the reply not handed out yet, as one text. */
  take(count: number): string | undefined {
    const end = Math.min(count, this.words.length);
    if (end <= this.given) return undefined;
    const text = this.words.slice(this.given, end).join(' ');
    this.given = end;
    return text;
  }

  rest(): string | undefined {
    return this.take(this.words.length);
  }
}
