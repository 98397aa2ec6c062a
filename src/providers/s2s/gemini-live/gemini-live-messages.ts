import { z } from 'zod';

/** Gemini Live server messages this adapter reads (docs/providers.md section 8); one top-level key each. */
export const serverMessage = z.looseObject({
  setupComplete: z.looseObject({}).optional(),
  serverContent: z
    .looseObject({
      modelTurn: z
        .looseObject({
          parts: z
            .array(
              z.looseObject({
                inlineData: z.looseObject({ mimeType: z.string(), data: z.string() }).optional(),
                text: z.string().optional(),
              }),
            )
            .optional(),
        })
        .optional(),
      outputTranscription: z.looseObject({ text: z.string().optional() }).optional(),
      inputTranscription: z.looseObject({ text: z.string().optional(), finished: z.boolean().optional() }).optional(),
      generationComplete: z.boolean().optional(),
      turnComplete: z.boolean().optional(),
      interrupted: z.boolean().optional(),
    })
    .optional(),
  toolCall: z
    .looseObject({
      functionCalls: z
        .array(
          z.looseObject({
            id: z.string().optional(),
            name: z.string().min(1),
            args: z.record(z.string(), z.unknown()).optional(),
          }),
        )
        .optional(),
    })
    .optional(),
  toolCallCancellation: z.looseObject({ ids: z.array(z.string()).optional() }).optional(),
  goAway: z.looseObject({ timeLeft: z.string().optional() }).optional(),
});

export type ServerMessage = z.infer<typeof serverMessage>;

/** The rate in `audio/pcm;rate=24000`; Gemini documents 24 kHz output when none is given. */
export function pcmRateHz(mimeType: string): number {
  const match = /rate=(\d+)/.exec(mimeType);
  return match ? Number(match[1]) : 24_000;
}
