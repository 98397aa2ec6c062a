import { describe, expect, it } from 'vitest';
import { Conversation } from './conversation.js';

describe('Conversation', () => {
  it('flattens initial messages with text parts', () => {
    const c = new Conversation([
      {
        role: 'system',
        content: [
          { type: 'text', text: 'Be brief.' },
          { type: 'text', text: 'Be kind.' },
        ],
      },
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

  it('keeps the heard words of the sentence still being synthesised, at a default pace before the voice has shown its own', () => {
    const c = new Conversation([]);
    c.addUser('Do you have rooms?');
    c.beginReply();
    c.appendReplyText('We have rooms with a view. Breakfast is included.');
    c.notePieceQueued('We have rooms with a view.');
    c.notePieceQueued('Breakfast is included.');
    // Nothing reported spoken yet; 650 ms at 65 ms a character is ten characters: "We have roo".
    expect(c.truncateReply(650, 700)).toBe('We have…');
    c.addUser('Which view?');
    expect(c.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
  });

  it('measures the sentence in flight at the pace of the sentences already spoken, or by the audio produced for it when longer', () => {
    const c = new Conversation([]);
    c.addUser('Weather?');
    c.beginReply();
    c.appendReplyText('It is sunny. Tomorrow brings rain.');
    c.notePieceQueued('It is sunny.');
    c.notePieceQueued('Tomorrow brings rain.');
    c.notePiece('It is sunny.', 0, 1200); // 100 ms a character
    // 1000 ms into the second sentence: ten characters, "Tomorrow b".
    expect(c.truncateReply(2200, 2300)).toBe('It is sunny. Tomorrow…');

    c.addUser('And then?');
    c.beginReply();
    c.appendReplyText('Tomorrow brings rain.');
    c.notePieceQueued('Tomorrow brings rain.');
    // The voice produced 4000 ms for 21 characters already: 2000 ms heard is half of it.
    expect(c.truncateReply(2000, 4000)).toBe('Tomorrow…');
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

describe('a reply that calls functions', () => {
  it('keeps each call answered right behind its message, and cuts the heard words across the passes', () => {
    const c = new Conversation([{ role: 'system', content: 'sys' }]);
    c.addUser('book a table');
    c.beginReply();
    c.appendReplyText('Let me look.');
    c.notePieceQueued('Let me look.');
    c.notePiece('Let me look.', 0, 1000);
    c.addToolCalls([{ id: 'c1', name: 'book', argumentsJson: '{}' }], '{"status":"running"}');
    c.continueReply();
    c.appendReplyText('You are booked for seven tonight.');
    c.notePieceQueued('You are booked for seven tonight.');
    // Heard: the first pass whole, then nothing of the second.
    expect(c.truncateReply(1000, 1500)).toBe('Let me look.');
    expect(c.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(c.messages[2]!.toolCalls).toEqual([{ id: 'c1', name: 'book', argumentsJson: '{}' }]);
    // The result arrives after the cut: it replaces the placeholder.
    c.setToolResult('c1', '{"booked":true}');
    expect(c.messages[3]).toEqual({ role: 'tool', content: '{"booked":true}', toolCallId: 'c1', toolName: 'book' });
  });

  it('keeps a message that only called functions even when nothing of it was heard', () => {
    const c = new Conversation([]);
    c.addUser('book');
    c.beginReply();
    c.addToolCalls([{ id: 'c1', name: 'book', argumentsJson: '{}' }], '{}');
    c.continueReply();
    c.truncateReply(0, 0);
    expect(c.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
  });
});
