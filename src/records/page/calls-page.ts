/**
 * The calls page (GET /calls-page): one self-contained document, nothing fetched from elsewhere. It
 * signs in with an API key (kept in the tab's sessionStorage, never in a cookie or a URL) or with
 * the token of a signed link (in the URL fragment, which browsers never send to a server), then
 * reads the calls API with it: recent calls with outcome and latency, and one call's transcript
 * beside a waterfall of each turn (drawn on a canvas), barge-ins marked, the recording playable.
 *
 * The script is plain ES2020 in a String.raw literal: it must not contain backticks or "${", and
 * says any character outside ASCII as a \u escape in a string (the raw literal passes the escape to
 * the browser): the build keeps every module plain ASCII (scripts/ascii-source.ts).
 */

/** Stage colours of the waterfall (the legend and the tests read them). */
export const WATERFALL_COLOURS = {
  vad: '#9aa0a6',
  stt: '#1f9d55',
  llm: '#2f6fed',
  tts: '#f08c00',
  send: '#8e44ad',
  speaking: '#17a2b8',
  interruption: '#dd3333',
} as const;

const STYLE = String.raw`
  :root { color-scheme: light; --accent: #2f6fed; --muted: #6b7280; --line: #d8dbe0; }
  * { box-sizing: border-box; }
  body { font: 14px/1.45 system-ui, sans-serif; margin: 0; padding: 1rem 1.2rem; color: #111; background: #fff; }
  h1 { font-size: 1.2rem; margin: 0 0 .8rem; }
  h2 { font-size: 1rem; margin: .8rem 0 .4rem; }
  button { font: inherit; padding: .35rem .8rem; border-radius: .35rem; border: 1px solid var(--muted); background: transparent; cursor: pointer; }
  button.primary { background: var(--accent); border-color: var(--accent); color: white; }
  input { font: inherit; padding: .35rem; min-width: 20rem; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); white-space: nowrap; }
  tbody tr { cursor: pointer; }
  tbody tr:hover { background: #f3f5f9; }
  .bar { display: flex; gap: .6rem; align-items: center; flex-wrap: wrap; margin-bottom: .8rem; }
  .outcome { padding: .05rem .45rem; border-radius: .8rem; font-size: .8rem; border: 1px solid var(--line); }
  .outcome.caller_hung_up, .outcome.bot_ended { background: #e8f5ee; }
  .outcome.error, .outcome.provider_failure, .outcome.interrupted { background: #fde8e8; }
  .split { display: grid; grid-template-columns: minmax(18rem, 1fr) minmax(24rem, 1.4fr); gap: 1rem; align-items: start; }
  #transcript .entry { margin: .3rem 0; }
  #transcript .who { font-weight: 600; margin-right: .4rem; }
  #transcript .caller .who { color: #1f9d55; }
  #transcript .bot .who { color: var(--accent); }
  #transcript .time { color: var(--muted); font-size: .8rem; margin-right: .4rem; }
  #transcript .cut { color: #dd3333; font-size: .8rem; margin-left: .3rem; }
  .legend span { display: inline-flex; align-items: center; gap: .25rem; margin-right: .7rem; font-size: .8rem; }
  .legend i { width: .8rem; height: .8rem; display: inline-block; border-radius: .15rem; }
  #error { color: #dd3333; }
  small, .muted { color: var(--muted); }
`;

const SCRIPT = String.raw`
(function () {
  'use strict';
  var $ = function (id) { return document.getElementById(id); };
  var KEY = 'switchboard.calls.credential';
  var COLOURS = JSON.parse(document.body.getAttribute('data-colours'));
  var olderCursor = null;
  var DASH = '\u2013';

  function credential() { return sessionStorage.getItem(KEY); }
  function showError(text) { $('error').textContent = text || ''; }
  function show(view) {
    ['login', 'list', 'call'].forEach(function (id) { $(id).hidden = id !== view; });
  }

  function api(path) {
    return fetch('/v1' + path, { headers: { authorization: 'Bearer ' + credential() } }).then(function (res) {
      return res.json().then(function (body) {
        if (res.status === 401) { sessionStorage.removeItem(KEY); show('login'); }
        if (!res.ok) throw new Error((body && body.info) || ('HTTP ' + res.status));
        return body;
      });
    });
  }

  function ms(value) {
    if (value === null || value === undefined) return DASH;
    return value >= 10000 ? (value / 1000).toFixed(1) + ' s' : Math.round(value) + ' ms';
  }
  function clock(msValue) {
    var s = Math.floor(msValue / 1000);
    return Math.floor(s / 60) + ':' + String(s % 60).padStart(2, '0');
  }
  function cell(row, text, className) {
    var td = document.createElement('td');
    if (className) {
      var span = document.createElement('span');
      span.className = className;
      span.textContent = text;
      td.appendChild(span);
    } else td.textContent = text;
    row.appendChild(td);
  }

  function loadList(cursor) {
    showError('');
    var query = '?limit=25' + (cursor ? '&starting_after=' + encodeURIComponent(cursor) : '');
    return api('/calls' + query).then(function (page) {
      var body = $('rows');
      if (!cursor) body.textContent = '';
      page.data.forEach(function (call) {
        var tr = document.createElement('tr');
        tr.setAttribute('data-call', call.id);
        cell(tr, new Date(call.started_at).toLocaleString());
        cell(tr, call.kind);
        cell(tr, call.from || call.room_name || DASH);
        cell(tr, call.to || DASH);
        cell(tr, call.outcome || call.status, 'outcome ' + (call.outcome || call.status));
        cell(tr, call.duration_ms === null ? DASH : clock(call.duration_ms));
        cell(tr, call.counts ? String(call.counts.turns) : DASH);
        cell(tr, call.counts ? String(call.counts.barge_ins) : DASH);
        cell(tr, ms(call.median_response_ms));
        tr.addEventListener('click', function () { location.hash = 'call=' + call.id; });
        body.appendChild(tr);
      });
      $('count').textContent = page.total_count + ' calls';
      olderCursor = page.data.length === 25 ? page.data[page.data.length - 1].id : null;
      $('older').hidden = !olderCursor;
      show('list');
    }).catch(function (err) { showError(err.message); });
  }

  function transcriptEntry(entry) {
    var div = document.createElement('div');
    div.className = 'entry ' + entry.speaker;
    var time = document.createElement('span');
    time.className = 'time';
    time.textContent = clock(entry.start_ms);
    var who = document.createElement('span');
    who.className = 'who';
    who.textContent = entry.speaker === 'caller' ? 'Caller' : 'Bot';
    var text = document.createElement('span');
    text.textContent = entry.text;
    div.appendChild(time);
    div.appendChild(who);
    div.appendChild(text);
    if (entry.interrupted) {
      var cut = document.createElement('span');
      cut.className = 'cut';
      cut.textContent = 'cut off';
      div.appendChild(cut);
    }
    return div;
  }

  /** The stages of one turn as [from, to, colour, label] in ms from the call's start. */
  function segments(t) {
    var out = [];
    function add(from, to, colour, label) {
      if (from !== undefined && to !== undefined && to >= from) out.push([from, to, colour, label]);
    }
    add(t.caller_last_voiced_ms, t.vad_stop_ms, COLOURS.vad, 'VAD');
    add(t.vad_stop_ms, t.stt_final_ms, COLOURS.stt, 'STT');
    add(t.vendor_speech_started_ms, t.stt_final_ms, COLOURS.stt, 'heard');
    add(t.llm_request_ms, t.llm_first_token_ms, COLOURS.llm, 'LLM');
    var ttsFrom = t.llm_first_token_ms !== undefined ? t.llm_first_token_ms : (t.vendor_speech_started_ms !== undefined ? t.vendor_speech_started_ms : t.llm_request_ms);
    add(ttsFrom, t.tts_first_audio_ms, COLOURS.tts, t.engine === 's2s' ? 'vendor' : 'TTS');
    add(t.tts_first_audio_ms, t.first_frame_sent_ms, COLOURS.send, 'send');
    return out;
  }

  function drawWaterfall(turns) {
    var canvas = $('waterfall');
    var rowHeight = 30, top = 24, left = 86, right = 16;
    var width = canvas.parentElement.clientWidth || 640;
    canvas.width = width;
    canvas.height = top + Math.max(1, turns.length) * rowHeight + 8;
    var g = canvas.getContext('2d');
    g.fillStyle = '#ffffff';
    g.fillRect(0, 0, canvas.width, canvas.height);
    g.font = '12px system-ui, sans-serif';
    var rows = turns.map(function (t) {
      var segs = segments(t);
      var start = segs.length ? segs[0][0] : t.first_frame_sent_ms;
      var responseEnd = t.first_frame_sent_ms !== undefined ? t.first_frame_sent_ms : (segs.length ? segs[segs.length - 1][1] : start);
      var speakingEnd = t.ended_ms !== undefined ? t.ended_ms : responseEnd;
      return { t: t, segs: segs, start: start, responseEnd: responseEnd, speakingEnd: speakingEnd };
    }).filter(function (r) { return r.start !== undefined; });
    var spanMs = 1;
    rows.forEach(function (r) {
      spanMs = Math.max(spanMs, r.responseEnd - r.start + Math.min(2000, r.speakingEnd - r.responseEnd));
      if (r.t.interruption) spanMs = Math.max(spanMs, r.t.interruption.clear_ms - r.start);
    });
    var scale = (canvas.width - left - right) / spanMs;
    g.fillStyle = '#6b7280';
    g.fillText('0', left, 14);
    g.fillText(ms(spanMs), canvas.width - right - 50, 14);
    rows.forEach(function (r, i) {
      var y = top + i * rowHeight;
      var x = function (at) { return left + (at - r.start) * scale; };
      g.fillStyle = '#111111';
      g.fillText('#' + r.t.index + ' ' + r.t.kind, 4, y + 16);
      r.segs.forEach(function (s) {
        g.fillStyle = s[2];
        g.fillRect(x(s[0]), y + 4, Math.max(2, (s[1] - s[0]) * scale), rowHeight - 12);
      });
      if (r.speakingEnd > r.responseEnd) {
        g.fillStyle = COLOURS.speaking;
        var end = Math.min(r.speakingEnd, r.responseEnd + spanMs);
        var speakingWidth = Math.min((end - r.responseEnd) * scale, canvas.width - right - x(r.responseEnd));
        g.fillRect(x(r.responseEnd), y + 9, Math.max(2, speakingWidth), rowHeight - 22);
      }
      if (r.t.interruption) {
        var onset = x(r.t.interruption.onset_ms), clear = x(r.t.interruption.clear_ms);
        g.fillStyle = COLOURS.interruption;
        g.fillRect(Math.min(onset, clear), y + 2, Math.max(3, Math.abs(clear - onset)), rowHeight - 8);
      }
      if (r.t.response_ms !== undefined) {
        g.fillStyle = '#111111';
        g.fillText(ms(r.t.response_ms), Math.min(x(r.responseEnd) + 4, canvas.width - 60), y + 16);
      }
    });
    canvas.setAttribute('data-turns', String(rows.length));
  }

  function loadCall(id) {
    showError('');
    show('call');
    $('transcript').textContent = '';
    $('recording').hidden = true;
    return api('/calls/' + encodeURIComponent(id)).then(function (call) {
      $('call-title').textContent = (call.from || call.room_name || call.kind) + ' \u2014 ' + new Date(call.started_at).toLocaleString();
      $('call-facts').textContent = [
        'outcome: ' + (call.outcome || call.status),
        call.duration_ms === null ? null : 'duration ' + clock(call.duration_ms),
        call.counts ? call.counts.turns + ' turns, ' + call.counts.barge_ins + ' barge-ins' : null,
        'median response ' + ms(call.median_response_ms),
        call.services ? Object.keys(call.services).map(function (k) { return k + ': ' + call.services[k]; }).join(', ') : null,
      ].filter(Boolean).join(' \u00b7 ');
      drawWaterfall(call.turns);
      if (call.recording_id) {
        api('/recordings/' + encodeURIComponent(call.recording_id) + '/access-link').then(function (link) {
          $('recording').src = link.download_link;
          $('recording').hidden = false;
        }).catch(function () {});
      }
      if (!call.has_transcript) {
        $('transcript').textContent = call.status === 'in-progress' ? 'The call is in progress.' : 'No transcript for this call.';
        return;
      }
      return api('/calls/' + encodeURIComponent(id) + '/transcript').then(function (t) {
        t.entries.forEach(function (e) { $('transcript').appendChild(transcriptEntry(e)); });
        $('call').setAttribute('data-loaded', 'true');
      });
    }).then(function () { $('call').setAttribute('data-loaded', 'true'); })
      .catch(function (err) { showError(err.message); });
  }

  function route() {
    if (!credential()) { show('login'); return; }
    var match = /^#call=(.+)$/.exec(location.hash);
    if (match) loadCall(decodeURIComponent(match[1]));
    else loadList(null);
  }

  var fromLink = /^#token=(.+)$/.exec(location.hash);
  if (fromLink) {
    sessionStorage.setItem(KEY, decodeURIComponent(fromLink[1]));
    history.replaceState(null, '', location.pathname);
  }
  $('login-form').addEventListener('submit', function (event) {
    event.preventDefault();
    var key = $('key').value.trim();
    if (!key) return;
    sessionStorage.setItem(KEY, key);
    $('key').value = '';
    route();
  });
  $('logout').addEventListener('click', function () { sessionStorage.removeItem(KEY); location.hash = ''; show('login'); });
  $('back').addEventListener('click', function () { location.hash = ''; });
  $('older').addEventListener('click', function () { if (olderCursor) loadList(olderCursor); });
  window.addEventListener('hashchange', route);
  route();
})();
`;

function legend(): string {
  const names: Record<keyof typeof WATERFALL_COLOURS, string> = {
    vad: 'caller’s last voice → VAD stop',
    stt: 'STT final',
    llm: 'LLM first token',
    tts: 'TTS first audio',
    send: 'first frame sent',
    speaking: 'bot speaking',
    interruption: 'barge-in (onset → clear)',
  };
  return Object.entries(WATERFALL_COLOURS)
    .map(([key, colour]) => `<span><i style="background:${colour}"></i>${names[key as keyof typeof names]}</span>`)
    .join('');
}

export function callsPageHtml(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>Switchboard calls</title>
<style>${STYLE}</style>
</head>
<body data-colours='${JSON.stringify(WATERFALL_COLOURS)}'>
<h1>Calls</h1>
<p id="error" role="alert"></p>
<section id="login" hidden>
  <form id="login-form" class="bar">
    <input id="key" type="password" placeholder="API key" autocomplete="off" aria-label="API key">
    <button class="primary" type="submit">Sign in</button>
  </form>
  <p class="muted">The key stays in this tab (sessionStorage) and goes only to this server’s API.</p>
</section>
<section id="list" hidden>
  <div class="bar"><span id="count" class="muted"></span><button id="logout" type="button">Sign out</button></div>
  <table>
    <thead><tr><th>Started</th><th>Kind</th><th>From</th><th>To</th><th>Outcome</th><th>Duration</th><th>Turns</th><th>Barge-ins</th><th>Median response</th></tr></thead>
    <tbody id="rows"></tbody>
  </table>
  <div class="bar"><button id="older" type="button" hidden>Older calls</button></div>
</section>
<section id="call" hidden>
  <div class="bar"><button id="back" type="button">← All calls</button><strong id="call-title"></strong></div>
  <p id="call-facts" class="muted"></p>
  <audio id="recording" controls hidden></audio>
  <div class="split">
    <div><h2>Transcript</h2><div id="transcript"></div></div>
    <div><h2>Turns</h2><div class="legend">${legend()}</div><canvas id="waterfall" height="60"></canvas></div>
  </div>
</section>
<script>${SCRIPT}</script>
</body>
</html>`;
}
