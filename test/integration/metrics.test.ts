import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import { ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';

let server: CallServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('GET /metrics', () => {
  it('counts calls, turn latencies and the playout clock, behind a token when one is set', async () => {
    server = await startCallServer(
      (registry) => {
        registry
          .registerStt('scripted_stt', () => new ScriptedStt([]))
          .registerLlm('scripted_llm', () => new ScriptedLlm({ replies: ['Connecting you now.'] }))
          .registerTts('tone_tts', () => new ToneTts());
      },
      { SWITCHBOARD_METRICS_TOKEN: 'scrape-me' },
    );
    const { wssUrl } = await server.createConfig({
      services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
      config: [],
    });
    const report = await runPhoneCall({
      target: { wssUrl },
      scenario: {
        steps: [
          { do: 'dtmf', digits: '1#' },
          { do: 'wait-bot-silence', ms: 300 },
        ],
      },
    });
    expect(report.outcome).toBe('completed');
    const refused = await fetch(`${server.baseUrl}/metrics`);
    expect(refused.status).toBe(401);
    const scrape = () => fetch(`${server!.baseUrl}/metrics`, { headers: { authorization: 'Bearer scrape-me' } });
    const res = await scrape();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    // The server sees the hang-up a moment after the simulator reports it: scrape until it has.
    let text = await res.text();
    while (!/^switchboard_calls_active 0$/m.test(text)) text = await (await scrape()).text();
    expect(text).toMatch(/^switchboard_calls_active 0$/m);
    expect(text).toMatch(/^switchboard_calls_ended_total\{reason="[^"]+"\} 1$/m);
    expect(text).toMatch(/^switchboard_turn_latency_seconds_count\{kind="dtmf",stage="first_frame_sent"\} 1$/m);
    expect(text).toMatch(/^switchboard_playout_tick_lag_seconds_count [1-9]\d*$/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_p99_seconds /m);
    expect(text).toMatch(/^process_resident_memory_bytes /m);

    // Every metric the Grafana dashboard in deploy/ charts is one this server serves.
    const dashboard = JSON.parse(
      readFileSync(new URL('../../deploy/grafana-dashboard.json', import.meta.url), 'utf8'),
    ) as {
      panels: Array<{ targets: Array<{ expr: string }> }>;
    };
    const charted = new Set(
      dashboard.panels.flatMap((p) =>
        p.targets.flatMap((t) => t.expr.match(/\b(switchboard|process|nodejs)_[a-z0-9_]+/g) ?? []),
      ),
    );
    expect(charted.size).toBeGreaterThan(8);
    for (const name of charted) {
      const family = name.replace(/_(bucket|count|sum)$/, '');
      expect(text, name).toMatch(new RegExp(`^# TYPE ${family} `, 'm'));
    }
  });
});
