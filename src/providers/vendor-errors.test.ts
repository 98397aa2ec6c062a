import { describe, expect, it } from 'vitest';
import {
  MAX_ERROR_TEXT_CHARS,
  isRetryableCloseCode,
  isRetryableStatus,
  knownVendorErrorText,
  redact,
  vendorErrorText,
} from './vendor-errors.js';

describe('vendor error text', () => {
  it('reads the human part of every vendor error shape, with its kind', () => {
    expect(vendorErrorText('{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error"}}')).toBe(
      'invalid_request_error: Incorrect API key provided.',
    );
    expect(vendorErrorText('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}')).toBe(
      'overloaded_error: Overloaded',
    );
    expect(vendorErrorText('[{"error":{"code":401,"message":"API key not valid.","status":"UNAUTHENTICATED"}}]')).toBe(
      'UNAUTHENTICATED: API key not valid.',
    );
    expect(vendorErrorText('{"err_code":"INVALID_AUTH","err_msg":"Invalid credentials.","request_id":"r"}')).toBe(
      'Invalid credentials. (INVALID_AUTH)',
    );
    expect(vendorErrorText('{"title":"Unauthorized","message":"Invalid API key"}')).toBe(
      'Unauthorized: Invalid API key',
    );
    expect(vendorErrorText('{"detail":{"status":"invalid_api_key","message":"Invalid API key"}}')).toBe(
      'Invalid API key',
    );
    expect(vendorErrorText('{"detail":"Not Found"}')).toBe('Not Found');
    expect(vendorErrorText('{"error":"model \\"llama9\\" not found"}')).toBe('model "llama9" not found');
  });

  it('takes any other body as it is, on one line and cut short', () => {
    expect(vendorErrorText('<html>\n  <body>Bad gateway</body>\n</html>')).toBe(
      '<html> <body>Bad gateway</body> </html>',
    );
    expect(vendorErrorText('x'.repeat(2000))).toHaveLength(MAX_ERROR_TEXT_CHARS + 1);
    // A whole completion is not an error shape: it must not be quoted into an error message.
    expect(knownVendorErrorText('{"choices":[{"message":{"content":"secret plans"}}]}')).toBeUndefined();
  });

  it('never shows a key', () => {
    expect(redact('bad key sk-123456 (sk-123456)', 'sk-123456')).toBe('bad key [redacted] ([redacted])');
    expect(redact('a b', ['a', 'bb'])).toBe('a b');
  });

  it('retries what may pass, and only that', () => {
    expect([408, 409, 425, 429, 500, 503].every(isRetryableStatus)).toBe(true);
    expect([400, 401, 403, 404, 422].some(isRetryableStatus)).toBe(false);
    expect([1006, 1011, 1012].every(isRetryableCloseCode)).toBe(true);
    expect([1002, 1003, 1007, 1008, 1009].some(isRetryableCloseCode)).toBe(false);
  });
});
