import jpeg from 'jpeg-js';
import type { I420Picture } from './vp8-decoder.js';

/** Pictures wider than this are halved (again) before encoding: a vision model needs no more, and JPEG encoding is ours to pay. */
const MAX_PICTURE_WIDTH = 640;
const JPEG_QUALITY = 80;

/** A decoded picture as JPEG: BT.601 (limited range, as VP8 codes it) to RGB, halved while too wide. */
export function encodeJpeg(picture: I420Picture): Buffer {
  let step = 1;
  while (picture.width / step > MAX_PICTURE_WIDTH) step *= 2;
  const width = Math.floor(picture.width / step);
  const height = Math.floor(picture.height / step);
  const rgba = Buffer.alloc(width * height * 4);
  const { y, u, v } = picture;
  for (let row = 0; row < height; row++) {
    const sy = row * step;
    for (let col = 0; col < width; col++) {
      const sx = col * step;
      const Y = 1.164 * (y.bytes[sy * y.stride + sx]! - 16);
      const chroma = (sy >> 1) * u.stride + (sx >> 1);
      const U = u.bytes[chroma]! - 128;
      const V = v.bytes[(sy >> 1) * v.stride + (sx >> 1)]! - 128;
      const at = (row * width + col) * 4;
      rgba[at] = clamp(Y + 1.596 * V);
      rgba[at + 1] = clamp(Y - 0.392 * U - 0.813 * V);
      rgba[at + 2] = clamp(Y + 2.017 * U);
      rgba[at + 3] = 255;
    }
  }
  return jpeg.encode({ data: rgba, width, height }, JPEG_QUALITY).data;
}

function clamp(value: number): number {
  return value < 0 ? 0 : value > 255 ? 255 : Math.round(value);
}
