import { describe, expect, it } from 'vitest';
import { redactUrl } from './redact-url.js';

describe('redactUrl', () => {
  it('drops the values of credential parameters and keeps the path and the rest', () => {
    expect(redactUrl('/recording-downloads/abc/mixed.wav?expires=1700000000&signature=s3cr3t')).toBe(
      '/recording-downloads/abc/mixed.wav?expires=1700000000&signature=[redacted]',
    );
    expect(redactUrl('/rooms/r1/ws?token=v1.abc.def')).toBe('/rooms/r1/ws?token=[redacted]');
    expect(
      redactUrl(
        'https://b.s3.amazonaws.com/k.wav?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F1&X-Amz-Date=1&X-Amz-Expires=900&X-Amz-Security-Token=t&X-Amz-Signature=ab&X-Amz-SignedHeaders=host',
      ),
    ).toBe(
      'https://b.s3.amazonaws.com/k.wav?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=[redacted]&X-Amz-Date=1&X-Amz-Expires=900&X-Amz-Security-Token=[redacted]&X-Amz-Signature=[redacted]&X-Amz-SignedHeaders=host',
    );
    expect(redactUrl('/x?access_token=a&api_key=b&client_secret=c&limit=5&%74oken=d')).toBe(
      '/x?access_token=[redacted]&api_key=[redacted]&client_secret=[redacted]&limit=5&%74oken=[redacted]',
    );
  });

  it('drops a password in the userinfo and leaves URLs without secrets alone', () => {
    expect(redactUrl('https://user:hunter2@hooks.example.com/start?x=1')).toBe(
      'https://user:[redacted]@hooks.example.com/start?x=1',
    );
    expect(redactUrl('https://hooks.example.com/start')).toBe('https://hooks.example.com/start');
    expect(redactUrl('/v1/recordings?limit=5&starting_after=abc')).toBe('/v1/recordings?limit=5&starting_after=abc');
    expect(redactUrl('/a?flag&token')).toBe('/a?flag&token');
  });
});
