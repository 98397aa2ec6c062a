import { describe, expect, it } from 'vitest';
import { asciiSource } from '../../scripts/ascii-source.js';

/** What a rewritten module evaluates to, and that it is ASCII. */
async function evaluate(code: string): Promise<Record<string, unknown>> {
  expect(code).toMatch(/^[\x20-\x7e\n]*$/);
  return import(`data:text/javascript,${encodeURIComponent(code)}`);
}

describe('asciiSource', () => {
  it('leaves ASCII code as it is', () => {
    const code = 'export const a = "x";\n';
    expect(asciiSource(code, 'a.js')).toBe(code);
  });

  it('escapes the characters of comments, strings and regular expressions, and the module does the same', async () => {
    const code = [
      '// caller → bot: 5 × 20 ms',
      '/** a dash – and a face 😀 */',
      "export const dash = /[–—]/.test('a – b');",
      "export const face = /😀/u.test('😀') && /^😀$/.test('😀');",
      "export const ellipsis = 'wait…'.replace(/…$/, '...');",
      'export const classOfTwo = /^[é😀]$/u.test("😀");',
    ].join('\n');
    const out = asciiSource(code, 'a.js');
    expect(out).toContain('// caller \\u2192 bot: 5 \\u00d7 20 ms');
    expect({ ...(await evaluate(out)) }).toEqual({ dash: true, face: true, ellipsis: 'wait...', classOfTwo: true });
  });

  it('refuses a tagged template, whose raw text its tag reads, and names the place', () => {
    expect(() => asciiSource('export const s = String.raw`a\n– b`;', 'chunks/page.js')).toThrow(
      'chunks/page.js: a non-ASCII character at line 2, column 1 in a template; write it as an escape in the source',
    );
  });
});
