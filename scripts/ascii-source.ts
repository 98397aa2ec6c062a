import { type Comment, type Token, parse } from 'acorn';

/**
 * Rewrites a bundle's chunk so that it is plain ASCII, without changing what it does.
 *
 * Why: V8 keeps the source text of every module it loads, for as long as the module lives, and
 * keeps a string with any character above U+00FF at two bytes per character. One dash in one
 * comment doubles the whole chunk: the server's largest chunk, 2.4 MB of text, took 4.7 MB of an
 * idle server's heap for 38 such lines (docs/cost-per-call.md, "One byte per character").
 *
 * esbuild already escapes strings and plain template literals (its `charset: 'ascii'`, the
 * default); what it leaves are comments, regular expressions and tagged templates. Here:
 * - a comment's characters become `\u` escapes (a comment means nothing either way);
 * - a regular expression's or a string's become `\u` escapes, which mean the same characters (one
 *   above U+FFFF as its two surrogates: what it is in a string or a pattern without the `u` flag,
 *   and what a pattern with it reads a pair of escapes as);
 * - anything else (a tagged template such as `String.raw`, whose raw text its tag reads, or an
 *   identifier) is an error that names the place: the source should say it with an escape.
 */
export function asciiSource(code: string, file: string): string {
  if (isAscii(code)) return code;
  const escapable: Array<{ start: number; end: number }> = [];
  const tokens: Token[] = [];
  const comments: Comment[] = [];
  parse(code, {
    ecmaVersion: 'latest',
    sourceType: 'module',
    allowHashBang: true,
    onComment: comments,
    onToken: tokens,
  });
  for (const { start, end } of comments) if (!isAscii(code.slice(start, end))) escapable.push({ start, end });
  for (const token of tokens) {
    const text = code.slice(token.start, token.end);
    if (isAscii(text)) continue;
    if (token.type.label !== 'regexp' && token.type.label !== 'string') {
      throw new Error(
        `${file}: a non-ASCII character at ${where(code, token.start + firstNonAscii(text))} in a ${token.type.label}; write it as an escape in the source`,
      );
    }
    escapable.push({ start: token.start, end: token.end });
  }
  escapable.sort((a, b) => a.start - b.start);
  let out = '';
  let at = 0;
  for (const { start, end } of escapable) {
    out += code.slice(at, start) + escapeNonAscii(code.slice(start, end));
    at = end;
  }
  out += code.slice(at);
  if (!isAscii(out)) throw new Error(`${file}: a non-ASCII character left at ${where(out, firstNonAscii(out))}`);
  return out;
}

function escapeNonAscii(text: string): string {
  // Per UTF-16 unit, so a character above U+FFFF becomes its two surrogates' escapes.
  return text.replace(/[\u0080-\uffff]/g, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function isAscii(text: string): boolean {
  return firstNonAscii(text) === -1;
}

function firstNonAscii(text: string): number {
  return text.search(/[\u0080-\uffff]/);
}

function where(code: string, offset: number): string {
  const before = code.slice(0, offset).split('\n');
  return `line ${before.length}, column ${before[before.length - 1]!.length + 1}`;
}
