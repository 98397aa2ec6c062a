/**
 * The web client behind room_url: one self-contained page (no build step, nothing fetched from
 * elsewhere). It asks for the microphone, joins with the token from the URL fragment (or the
 * field), streams 16 kHz PCM (or the audio device's own rate when the browser cannot capture at
 * 16 kHz), plays the bot, and shows transcripts, the bot's speaking state and each turn's latency.
 * Messages follow RTVI (label "rtvi-ai"); see room-messages.ts for the protocol.
 *
 * The script is plain ES2020 in a String.raw literal: it must not contain backticks or "${".
 */

const STYLE = String.raw`
  :root { color-scheme: light dark; --accent: #2f6fed; --muted: #8a8f98; }
  * { box-sizing: border-box; }
  body { font: 15px/1.45 system-ui, sans-serif; margin: 0; padding: 1.2rem; max-width: 52rem; margin-inline: auto; }
  h1 { font-size: 1.25rem; margin: 0 0 .8rem; }
  .bar { display: flex; gap: .6rem; align-items: center; flex-wrap: wrap; margin-bottom: .8rem; }
  button { font: inherit; padding: .45rem .9rem; border-radius: .4rem; border: 1px solid var(--muted); background: transparent; cursor: pointer; }
  button.primary { background: var(--accent); border-color: var(--accent); color: white; }
  button:disabled { opacity: .5; cursor: default; }
  input { font: inherit; padding: .4rem; flex: 1; min-width: 14rem; }
  .pill { padding: .15rem .6rem; border-radius: 1rem; border: 1px solid var(--muted); font-size: .85rem; }
  .pill.on { background: #1f9d55; border-color: #1f9d55; color: white; }
  #transcript { border: 1px solid var(--muted); border-radius: .4rem; padding: .6rem; height: 22rem; overflow-y: auto; }
  .line { margin: .25rem 0; }
  .line.user .who { color: #1f9d55; }
  .line.bot .who { color: var(--accent); }
  .line.interim { opacity: .6; font-style: italic; }
  .who { font-weight: 600; margin-right: .4rem; }
  #camera { width: 160px; border-radius: .4rem; display: none; }
  #error { color: #d33; }
  small { color: var(--muted); }
`;

const SCRIPT = String.raw`
(function () {
  'use strict';
  var $ = function (id) { return document.getElementById(id); };
  var LABEL = 'rtvi-ai';
  var PREFERRED_RATE_HZ = 16000;
  var ACCEPTED_RATES_HZ = [8000, 16000, 24000, 44100, 48000];
  var CAMERA_EVERY_MS = 1000;
  var ws = null, ctx = null, mic = null, cam = null, camTimer = null, worklet = null, source = null;
  var muted = false, joined = false, rateHz = 0;
  var pending = null, pendingLength = 0, frameSamples = 0;
  var playHead = 0, playing = [], botChunks = 0;
  var userLine = null, botLine = null, latencies = [];

  function setStatus(text) { $('status').textContent = text; }
  function showError(text) { $('error').textContent = text || ''; }

  function line(kind, text, interim) {
    var div = document.createElement('div');
    div.className = 'line ' + kind + (interim ? ' interim' : '');
    var who = document.createElement('span');
    who.className = 'who';
    who.textContent = kind === 'user' ? 'You' : 'Bot';
    var body = document.createElement('span');
    body.className = 'text';
    body.textContent = text;
    div.appendChild(who);
    div.appendChild(body);
    $('transcript').appendChild(div);
    $('transcript').scrollTop = $('transcript').scrollHeight;
    return div;
  }

  function onUserTranscript(text, final) {
    if (!userLine) userLine = line('user', text, !final);
    userLine.querySelector('.text').textContent = text;
    userLine.classList.toggle('interim', !final);
    if (final) { userLine = null; botLine = null; }
  }

  function onBotText(text) {
    if (!botLine) botLine = line('bot', text, false);
    else botLine.querySelector('.text').textContent += ' ' + text;
    $('transcript').scrollTop = $('transcript').scrollHeight;
  }

  function setBotSpeaking(on) {
    var pill = $('bot-state');
    pill.textContent = on ? 'bot speaking' : 'bot listening';
    pill.classList.toggle('on', on);
    if (!on) botLine = null;
  }

  function setUserSpeaking(on) {
    var pill = $('user-state');
    pill.textContent = on ? 'you are speaking' : 'you are quiet';
    pill.classList.toggle('on', on);
  }

  function onLatency(ms) {
    latencies.push(ms);
    var sorted = latencies.slice().sort(function (a, b) { return a - b; });
    $('latency').textContent = 'last turn ' + ms + ' ms, median ' + sorted[Math.floor(sorted.length / 2)] + ' ms over ' + latencies.length + ' turns';
  }

  function send(type, data) {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ label: LABEL, type: type, id: String(Date.now()), data: data }));
  }

  // ---- microphone: an AudioWorklet hands 128-sample blocks to this page, which sends 20 ms of PCM16 at a time ----

  var WORKLET = "class Capture extends AudioWorkletProcessor { process(inputs) { var ch = inputs[0] && inputs[0][0]; if (ch) this.port.postMessage(ch.slice(0)); return true; } } registerProcessor('capture', Capture);";

  function makeContext() {
    try {
      var c = new AudioContext({ sampleRate: PREFERRED_RATE_HZ, latencyHint: 'interactive' });
      c.createMediaStreamSource(mic).disconnect();
      return c;
    } catch (err) {
      // Some browsers cannot connect a microphone to a context at another rate: use the device's own.
      return new AudioContext({ latencyHint: 'interactive' });
    }
  }

  function onCaptured(block) {
    if (!joined || muted) return;
    for (var i = 0; i < block.length; i++) {
      var s = Math.max(-1, Math.min(1, block[i]));
      pending[pendingLength++] = s < 0 ? s * 0x8000 : s * 0x7fff;
      if (pendingLength === frameSamples) {
        if (ws && ws.readyState === WebSocket.OPEN) ws.send(pending.buffer.slice(0));
        pendingLength = 0;
      }
    }
  }

  // ---- playback: each chunk of the bot's PCM16 is scheduled right after the previous one ----

  function playChunk(arrayBuffer) {
    var pcm = new Int16Array(arrayBuffer);
    if (pcm.length === 0) return;
    botChunks += 1;
    var buffer = ctx.createBuffer(1, pcm.length, rateHz);
    var out = buffer.getChannelData(0);
    for (var i = 0; i < pcm.length; i++) out[i] = pcm[i] / 32768;
    var node = ctx.createBufferSource();
    node.buffer = buffer;
    node.connect(ctx.destination);
    // A small cushion after a pause absorbs network jitter.
    if (playHead < ctx.currentTime + 0.02) playHead = ctx.currentTime + 0.06;
    node.start(playHead);
    playHead += buffer.duration;
    playing.push(node);
    node.onended = function () { var k = playing.indexOf(node); if (k >= 0) playing.splice(k, 1); };
  }

  function stopPlayback() {
    playing.forEach(function (node) { try { node.stop(); } catch (e) { /* already stopped */ } });
    playing = [];
    playHead = 0;
  }

  // ---- camera (vision profiles): a small JPEG every second ----

  function startCamera() {
    if (cam || !navigator.mediaDevices) return;
    navigator.mediaDevices.getUserMedia({ video: { width: 320, height: 240 } }).then(function (stream) {
      cam = stream;
      var video = $('camera');
      video.srcObject = stream;
      video.style.display = 'block';
      var canvas = document.createElement('canvas');
      canvas.width = 320; canvas.height = 240;
      camTimer = setInterval(function () {
        if (!joined || video.readyState < 2) return;
        canvas.getContext('2d').drawImage(video, 0, 0, canvas.width, canvas.height);
        var dataUrl = canvas.toDataURL('image/jpeg', 0.6);
        var base64 = dataUrl.slice(dataUrl.indexOf(',') + 1);
        if (base64.length < 48 * 1024) send('user-image', { imageBase64: base64 });
      }, CAMERA_EVERY_MS);
    }).catch(function (err) { showError('camera: ' + err.message); });
  }

  // ---- the room socket ----

  function onServerMessage(msg) {
    if (!msg || msg.label !== LABEL) return;
    var data = msg.data || {};
    switch (msg.type) {
      case 'bot-ready':
        setStatus('connected: ' + (data.profile || 'bot') + ' is ready');
        if (data.enableCam) startCamera();
        break;
      case 'user-started-speaking': setUserSpeaking(true); break;
      case 'user-stopped-speaking': setUserSpeaking(false); break;
      case 'bot-started-speaking': setBotSpeaking(true); break;
      case 'bot-stopped-speaking': setBotSpeaking(false); break;
      case 'bot-interrupted': stopPlayback(); setBotSpeaking(false); break;
      case 'user-transcription': onUserTranscript(String(data.text || ''), data.final === true); break;
      case 'bot-transcription': onBotText(String(data.text || '')); break;
      case 'metrics': if (typeof data.turnLatencyMs === 'number') onLatency(data.turnLatencyMs); break;
      case 'error': showError(String(data.message || 'error')); break;
    }
  }

  function join() {
    var token = $('token').value.trim();
    if (!token) { showError('paste the token from POST /v1/bots/start, or open the room_url with #<token>'); return; }
    if (joined || ws) return;
    showError('');
    $('join').disabled = true;
    setStatus('asking for the microphone...');
    navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true } })
      .then(function (stream) {
        mic = stream;
        ctx = makeContext();
        rateHz = ctx.sampleRate;
        if (ACCEPTED_RATES_HZ.indexOf(rateHz) < 0) throw new Error('the audio device runs at ' + rateHz + ' Hz, which the room does not take');
        frameSamples = Math.round(rateHz / 50);
        pending = new Int16Array(frameSamples);
        var url = URL.createObjectURL(new Blob([WORKLET], { type: 'application/javascript' }));
        return ctx.audioWorklet.addModule(url).then(function () { return ctx.resume(); });
      })
      .then(function () {
        source = ctx.createMediaStreamSource(mic);
        worklet = new AudioWorkletNode(ctx, 'capture');
        worklet.port.onmessage = function (e) { onCaptured(e.data); };
        source.connect(worklet);
        // Connected to the output (it writes silence) so every browser keeps pulling it.
        worklet.connect(ctx.destination);
        connect(token);
      })
      .catch(function (err) {
        showError('could not start audio: ' + err.message);
        setStatus('not connected');
        teardown();
      });
  }

  function connect(token) {
    setStatus('connecting...');
    var url = location.origin.replace(/^http/, 'ws') + location.pathname.replace(/\/$/, '') + '/ws';
    // The token rides as a subprotocol, so it stays out of URLs and access logs.
    ws = new WebSocket(url, [LABEL, token]);
    ws.binaryType = 'arraybuffer';
    ws.onopen = function () {
      joined = true;
      $('mute').disabled = false;
      $('leave').disabled = false;
      send('client-ready', { version: '1.0.0', audio: { sampleRateHz: rateHz } });
    };
    ws.onmessage = function (e) {
      if (typeof e.data === 'string') {
        try { onServerMessage(JSON.parse(e.data)); } catch (err) { /* not ours */ }
      } else {
        playChunk(e.data);
      }
    };
    ws.onclose = function (e) {
      setStatus('disconnected' + (e.reason ? ': ' + e.reason : '') + ' (' + e.code + ')');
      if (e.code !== 1000) showError(e.reason || ('connection closed (' + e.code + ')'));
      teardown();
    };
  }

  function teardown() {
    joined = false;
    ws = null;
    stopPlayback();
    if (camTimer) clearInterval(camTimer);
    camTimer = null;
    [mic, cam].forEach(function (s) { if (s) s.getTracks().forEach(function (t) { t.stop(); }); });
    mic = null; cam = null;
    if (ctx) ctx.close();
    ctx = null;
    $('join').disabled = false;
    $('mute').disabled = true;
    $('leave').disabled = true;
    setBotSpeaking(false);
    setUserSpeaking(false);
  }

  function leave() {
    if (!ws) return;
    send('disconnect-bot');
    ws.close(1000, 'left');
  }

  function toggleMute() {
    muted = !muted;
    if (mic) mic.getAudioTracks().forEach(function (t) { t.enabled = !muted; });
    $('mute').textContent = muted ? 'Unmute' : 'Mute';
  }

  $('join').onclick = join;
  $('leave').onclick = leave;
  $('mute').onclick = toggleMute;
  var fromFragment = decodeURIComponent(location.hash.replace(/^#/, ''));
  if (fromFragment) {
    $('token').value = fromFragment;
    // Keep the token off the screen and out of shared links once it is in the field.
    history.replaceState(null, '', location.pathname + location.search);
    join();
  }
  window.switchboardRoom = { state: function () { return { joined: joined, muted: muted, sampleRateHz: rateHz, botAudioChunks: botChunks, latencies: latencies.slice() }; } };
})();
`;

/** The page for room `name`; `exists` false renders a "no such room" notice instead of failing. */
export function roomPageHtml(_name: string, exists: boolean): string {
  const notice = exists
    ? ''
    : '<p id="missing">This room does not exist or has ended. Start a new bot with POST /v1/bots/start.</p>';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>Switchboard room</title>
<style>${STYLE}</style>
</head>
<body>
<h1>Talk to the bot</h1>
${notice}
<div class="bar">
  <input id="token" type="password" placeholder="room token" autocomplete="off" aria-label="room token">
  <button id="join" class="primary">Join</button>
  <button id="mute" disabled>Mute</button>
  <button id="leave" disabled>Leave</button>
</div>
<div class="bar">
  <span id="status">not connected</span>
  <span id="user-state" class="pill">you are quiet</span>
  <span id="bot-state" class="pill">bot listening</span>
  <small id="latency">no turns yet</small>
</div>
<p id="error" role="alert"></p>
<video id="camera" autoplay muted playsinline></video>
<div id="transcript" aria-live="polite"></div>
<script>${SCRIPT}</script>
</body>
</html>
`;
}
