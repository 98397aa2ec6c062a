import { createRequire } from 'node:module';

/**
 * VP8 decoding for the camera of a WebRTC participant, through the libvpx decoder that the `ogv`
 * package ships compiled to WebAssembly (about 110 KB of wasm, loaded from the package's files:
 * nothing is built or downloaded at install or run time). The module is Emscripten's, written for
 * browsers and Node alike; it is CommonJS, hence `createRequire`.
 */

/** One decoded picture: 8-bit planes, 4:2:0 (VP8 has no other layout). */
export interface I420Picture {
  width: number;
  height: number;
  y: { bytes: Uint8Array; stride: number };
  u: { bytes: Uint8Array; stride: number };
  v: { bytes: Uint8Array; stride: number };
}

interface OgvVideoDecoder {
  init(done: () => void): void;
  processFrame(data: ArrayBuffer, done: (ok: number) => void): void;
  frameBuffer: {
    format: { cropLeft: number; cropTop: number; cropWidth: number; cropHeight: number };
    y: { bytes: Uint8Array; stride: number };
    u: { bytes: Uint8Array; stride: number };
    v: { bytes: Uint8Array; stride: number };
  } | null;
}

type OgvFactory = (options: Record<string, unknown>) => Promise<OgvVideoDecoder>;

const require = createRequire(import.meta.url);
let factory: OgvFactory | undefined;

/** A VP8 decoder with its own state (one per camera track). */
export class Vp8Decoder {
  private constructor(private readonly module: OgvVideoDecoder) {}

  static async create(): Promise<Vp8Decoder> {
    factory ??= require('ogv/dist/ogv-decoder-video-vp8-wasm.js') as OgvFactory;
    // The container's idea of the picture, which ogv's demuxer would give: RTP has none, and the
    // decoder reads only the display size from it (the picture's own size comes from the stream).
    const module = await factory({
      videoFormat: { cropWidth: 0, cropHeight: 0, displayWidth: 0, displayHeight: 0 },
    });
    await new Promise<void>((resolve) => module.init(resolve));
    return new Vp8Decoder(module);
  }

  /** Decodes one whole VP8 frame (a keyframe, or one that follows what was decoded); undefined when libvpx refuses it. */
  decode(frame: Uint8Array): Promise<I420Picture | undefined> {
    const copy = frame.buffer.slice(frame.byteOffset, frame.byteOffset + frame.byteLength) as ArrayBuffer;
    return new Promise((resolve) => {
      this.module.processFrame(copy, (ok) => {
        const picture = this.module.frameBuffer;
        if (!ok || !picture) {
          resolve(undefined);
          return;
        }
        // The planes hold the coded size; the crop is the picture the camera took.
        const { cropLeft, cropTop, cropWidth, cropHeight } = picture.format;
        const at = (plane: { bytes: Uint8Array; stride: number }, left: number, top: number) => ({
          bytes: plane.bytes.subarray(top * plane.stride + left),
          stride: plane.stride,
        });
        resolve({
          width: cropWidth,
          height: cropHeight,
          y: at(picture.y, cropLeft, cropTop),
          u: at(picture.u, cropLeft >> 1, cropTop >> 1),
          v: at(picture.v, cropLeft >> 1, cropTop >> 1),
        });
      });
    });
  }
}
