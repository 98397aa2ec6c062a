/** Audio as bytes on the wire: G.711 mu-law, or 16-bit little-endian PCM. */
export interface AudioFormat {
  encoding: 'mulaw' | 'linear16';
  sampleRateHz: number;
}

/** The telephone's format, and the one every call carries internally. */
export const MULAW_8K: AudioFormat = { encoding: 'mulaw', sampleRateHz: 8000 };
