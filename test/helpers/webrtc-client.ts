import { type RTCDataChannel, RTCPeerConnection, RTCRtpCodecParameters } from 'werift';

/**
 * A SmallWebRTC client made of werift, for tests without a browser: the offer Pipecat's transport
 * makes (audio sendrecv, video sendrecv, a data channel "chat"), sent once gathered (its
 * `waitForICEGathering` mode), then the answer applied and the data channel awaited.
 */
export interface TestWebRtcClient {
  pc: RTCPeerConnection;
  dc: RTCDataChannel;
  pcId: string;
  /** Text messages from the server, in order. */
  messages: string[];
  /** Resolves once the data channel is closed or the connection failed or closed. */
  ended: Promise<void>;
  close(): Promise<void>;
}

export async function offerSdp(): Promise<{ pc: RTCPeerConnection; dc: RTCDataChannel; sdp: string }> {
  const pc = new RTCPeerConnection({
    codecs: {
      audio: [new RTCRtpCodecParameters({ mimeType: 'audio/opus', clockRate: 48000, channels: 2 })],
      video: [new RTCRtpCodecParameters({ mimeType: 'video/VP8', clockRate: 90000 })],
    },
    iceUseIpv6: false,
    iceUseTcp: false,
  });
  pc.addTransceiver('audio', { direction: 'sendrecv' });
  pc.addTransceiver('video', { direction: 'sendrecv' });
  const dc = pc.createDataChannel('chat', { ordered: true });
  await pc.setLocalDescription(await pc.createOffer());
  if (pc.iceGatheringState !== 'complete')
    await new Promise<void>((resolve) => pc.iceGatheringStateChange.subscribe((s) => s === 'complete' && resolve()));
  return { pc, dc, sdp: pc.localDescription!.sdp };
}

export async function connectWebRtc(endpoint: string): Promise<TestWebRtcClient> {
  const { pc, dc, sdp } = await offerSdp();
  const response = await fetch(endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ sdp, type: 'offer', pc_id: null, restart_pc: false }),
  });
  if (!response.ok) throw new Error(`offer refused: ${response.status} ${await response.text()}`);
  const answer = (await response.json()) as { sdp: string; pc_id: string };
  await pc.setRemoteDescription({ type: 'answer', sdp: answer.sdp });
  const messages: string[] = [];
  dc.onMessage.subscribe((data) => messages.push(data.toString()));
  if (dc.readyState !== 'open')
    await new Promise<void>((resolve) => dc.stateChanged.subscribe((s) => s === 'open' && resolve()));
  const ended = new Promise<void>((resolve) => {
    dc.stateChanged.subscribe((s) => s === 'closed' && resolve());
    pc.connectionStateChange.subscribe((s) => (s === 'closed' || s === 'failed') && resolve());
  });
  return { pc, dc, pcId: answer.pc_id, messages, ended, close: () => pc.close() };
}
