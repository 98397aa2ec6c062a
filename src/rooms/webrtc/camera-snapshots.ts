import { Vp8RtpPayload } from 'werift';
import { keyframeToJpeg, warmCameraWorker } from './camera-worker-client.js';

/** How often the vision path gets a new picture of the camera: it reads the latest with each user turn. */
export const SNAPSHOT_INTERVAL_MS = 2000;
/** A keyframe bigger than this is not a camera picture we want (VP8 keyframes of 720p are well under). */
const MAX_FRAME_BYTES = 1024 * 1024;

export interface RtpPacketView {
  sequenceNumber: number;
  timestamp: number;
  marker: boolean;
  payload: Buffer;
}

/**
 * The camera of a WebRTC participant as pictures for the vision path: VP8 keyframes reassembled
 * from RTP (RFC 7741), then decoded by libvpx (WebAssembly) and encoded as JPEG (the format the
 * room socket's `user-image` carries) in a worker thread, since a picture takes tens to hundreds
 * of milliseconds that the event loop owes every call's audio frames. Only keyframes are decoded:
 * a picture every couple of seconds needs no inter frame, so between keyframes nothing is
 * decoded, and when a picture is due and no keyframe came, one is asked for (an RTCP PLI, which
 * browsers answer at once).
 */
export class CameraSnapshots {
  readonly stats = { keyframes: 0, snapshots: 0, keyframeRequests: 0, undecodable: 0 };
  private parts: Buffer[] = [];
  private frameTimestamp: number | undefined;
  private nextSequence: number | undefined;
  private frameIsKey = false;
  private frameBytes = 0;
  private lastSnapshotMs = Number.NEGATIVE_INFINITY;
  private lastRequestMs = Number.NEGATIVE_INFINITY;
  private decoding = false;
  private closed = false;

  constructor(
    private readonly onSnapshot: (jpegBase64: string) => void,
    private readonly requestKeyframe: () => void,
    private readonly onError: (err: unknown) => void,
    private readonly intervalMs = SNAPSHOT_INTERVAL_MS,
    private readonly now: () => number = () => performance.now(),
  ) {
    warmCameraWorker();
  }

  /** One RTP packet of the camera track. */
  push(rtp: RtpPacketView): void {
    if (this.closed || rtp.payload.byteLength === 0) return;
    let vp8: Vp8RtpPayload;
    try {
      vp8 = Vp8RtpPayload.deSerialize(rtp.payload);
    } catch {
      this.dropFrame();
      return;
    }
    if (vp8.sBit === 1 && vp8.pid === 0) {
      // The first packet of a frame: a keyframe only when a picture is due, or being assembled.
      this.dropFrame();
      if (!vp8.isKeyframe) {
        this.askForKeyframeIfDue();
        return;
      }
      if (!this.isDue() || this.decoding) return;
      this.frameTimestamp = rtp.timestamp;
      this.frameIsKey = true;
    } else if (this.frameTimestamp === undefined || rtp.timestamp !== this.frameTimestamp) {
      return;
    } else if (rtp.sequenceNumber !== this.nextSequence) {
      // A packet of the keyframe was lost: wait for the next one (asked for when due).
      this.dropFrame();
      return;
    }
    this.parts.push(vp8.payload);
    this.frameBytes += vp8.payload.byteLength;
    this.nextSequence = (rtp.sequenceNumber + 1) & 0xffff;
    if (this.frameBytes > MAX_FRAME_BYTES) {
      this.dropFrame();
      return;
    }
    if (rtp.marker && this.frameIsKey) {
      const frame = Buffer.concat(this.parts);
      this.dropFrame();
      this.stats.keyframes += 1;
      void this.snapshot(frame);
    }
  }

  close(): void {
    this.closed = true;
    this.dropFrame();
  }

  private isDue(): boolean {
    return this.now() - this.lastSnapshotMs >= this.intervalMs;
  }

  private askForKeyframeIfDue(): void {
    const nowMs = this.now();
    if (!this.isDue() || this.decoding || nowMs - this.lastRequestMs < this.intervalMs) return;
    this.lastRequestMs = nowMs;
    this.stats.keyframeRequests += 1;
    this.requestKeyframe();
  }

  private async snapshot(frame: Buffer): Promise<void> {
    this.decoding = true;
    try {
      const jpegBase64 = await keyframeToJpeg(frame);
      if (this.closed) return;
      if (jpegBase64 === undefined) {
        this.stats.undecodable += 1;
        return;
      }
      this.lastSnapshotMs = this.now();
      this.stats.snapshots += 1;
      this.onSnapshot(jpegBase64);
    } catch (err) {
      this.onError(err);
    } finally {
      this.decoding = false;
    }
  }

  private dropFrame(): void {
    this.parts = [];
    this.frameBytes = 0;
    this.frameTimestamp = undefined;
    this.nextSequence = undefined;
    this.frameIsKey = false;
  }
}
