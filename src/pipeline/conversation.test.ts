import { describe, expect, it } from 'vitest';
import { Conversation } from './conversation.js';

describe('Conversation', () => {
  it('flattens initial messages with text parts', () => {
    const c = new Conversation([
      { role: 'system', content: [{ type: 'text', text: 'Be brief.' }, { type: 'text', text: 'Be kind.' }] },
      { role: 'developer', content: 'Use English.' },
    ]);
    expect(c.messages).toEqual([
      { role: 'system', content: 'Be brief.\nBe kind.' },
      { role: 'system', content: 'Use English.' },
    ]);
  });

  it('cuts an interrupted reply to the pieces heard and the share of the playing piece', () => {
    const c = new Conversation([]);
    c.addUser('Tell me about the weather.');
    c.beginReply();
    c.appendReplyText('It is sunny today. Tomorrow will bring rain and strong wind from the west. Take an umbrella.');
    c.notePiece('It is sunny today.', 0, 1000);
    c.notePiece('Tomorrow will bring rain and strong wind from the west.', 1000, 3000);
    c.notePiece('Take an umbrella.', 3000, 4000);
    const kept = c.truncateReply(2000);
    expect(kept).toBe('It is sunny today. Tomorrow will bring rain and…');
    expect(c.messages.at(-1)).toEqual({ role: 'assistant', content: kept });
  });

  it('drops a reply the caller heard nothing of, and joins the next user turn to the previous one', () => {
    const c = new Conversation([]);
    c.addUser('Hello');
    c.beginReply();
    c.appendReplyText('Hi there!');
    c.notePiece('Hi there!', 0, 800);
    expect(c.truncateReply(0)).toBe('');
    c.addUser('are you there?');
    expect(c.messages).toEqual([{ role: 'user', content: 'Hello are you there?' }]);
  });

  it('keeps a reply that played in full', () => {
    const c = new Conversation([]);
    c.addUser('Hi');
    c.beginReply();
    c.appendReplyText('Hello!');
    c.endReply();
    c.addUser('Bye');
    expect(c.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
  });
});
