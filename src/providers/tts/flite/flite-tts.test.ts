import { describe, expect, it } from 'vitest';
import { collectSpeech, pieces, spoken } from '../../../../test/helpers/provider-kit.js';
import { createFliteTts } from './index.js';

describe('flite TTS', () => {
  it('speaks each piece in 8 kHz PCM, then reports it spoken', async () => {
    const tts = createFliteTts({ options: {}, apiKey: undefined, serviceOptions: {}, env: {} });
    expect(tts.outputFormat).toEqual({ encoding: 'linear16', sampleRateHz: 8000 });
    const outputs = await collectSpeech(tts, pieces('Hello.', 'Goodbye.'));
    expect(outputs.map((o) => o.type)).toEqual(['audio', 'spoken', 'audio', 'spoken']);
    expect(spoken(outputs)).toEqual(['Hello.', 'Goodbye.']);
    for (const output of outputs) if (output.type === 'audio') expect(output.audio.length).toBeGreaterThan(1600);
  });

  it('refuses an unknown voice when it is built', () => {
    expect(() =>
      createFliteTts({ options: { voice: 'nobody' }, apiKey: undefined, serviceOptions: {}, env: {} }),
    ).toThrow();
  });
});
