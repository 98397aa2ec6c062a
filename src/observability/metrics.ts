import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { CallSummary } from '../pipeline/call-metrics.js';

/**
 * What an operator scrapes at /metrics (Prometheus text format): the process's own figures
 * (CPU, memory, event-loop delay, from prom-client's defaults) and the call path's. One registry
 * per app, so several apps in one process (tests) do not collide.
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly callsActive: Gauge;
  private readonly callsEnded: Counter<'reason'>;
  private readonly bargeIns: Counter;
  private readonly providerErrors: Counter;
  private readonly droppedTranscripts: Counter;
  private readonly turnLatency: Histogram<'kind' | 'stage'>;
  private readonly playoutTickLag: Histogram;
  private readonly dialoutLegs: Counter<'outcome'>;
  private readonly turnStages: Histogram<'stage' | 'vendor'>;
  private readonly toolCalls: Counter<'tool' | 'result'>;
  private readonly toolLatency: Histogram<'tool'>;

  constructor() {
    // 10 ms resolution: the budget is about delays of 20 ms. Node counts the sampling interval in
    // each delay, so an idle loop reads about 10 ms.
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 10 });
    this.callsActive = new Gauge({
      name: 'switchboard_calls_active',
      help: 'Calls in progress.',
      registers: [this.registry],
    });
    this.callsEnded = new Counter({
      name: 'switchboard_calls_ended_total',
      help: 'Calls ended, by reason.',
      labelNames: ['reason'],
      registers: [this.registry],
    });
    this.bargeIns = new Counter({
      name: 'switchboard_barge_ins_total',
      help: 'Replies cut off by the caller.',
      registers: [this.registry],
    });
    this.providerErrors = new Counter({
      name: 'switchboard_provider_errors_total',
      help: 'Provider failures inside calls.',
      registers: [this.registry],
    });
    this.droppedTranscripts = new Counter({
      name: 'switchboard_stt_transcripts_dropped_total',
      help: 'Speech-to-text transcripts dropped as provider faults: longer than the caller’s audio could hold.',
      registers: [this.registry],
    });
    this.turnLatency = new Histogram({
      name: 'switchboard_turn_latency_seconds',
      help: 'From the end of the caller’s turn (or the reply’s start) to each stage of the reply.',
      labelNames: ['kind', 'stage'],
      buckets: [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5],
      registers: [this.registry],
    });
    this.playoutTickLag = new Histogram({
      name: 'switchboard_playout_tick_lag_seconds',
      help: 'How late the shared playout clock woke up; outbound frames are at most this late.',
      buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25],
      registers: [this.registry],
    });
    this.dialoutLegs = new Counter({
      name: 'switchboard_dialout_legs_total',
      help: 'Dial-out legs by how they went: answered, busy, no-answer, failed, canceled.',
      labelNames: ['outcome'],
      registers: [this.registry],
    });
    this.toolCalls = new Counter({
      name: 'switchboard_tool_calls_total',
      help: 'Function calls the model made, by function and result (ok, or failed: an error, a timeout, a cancellation).',
      labelNames: ['tool', 'result'],
      registers: [this.registry],
    });
    this.toolLatency = new Histogram({
      name: 'switchboard_tool_call_seconds',
      help: 'How long each function call took to answer, by function.',
      labelNames: ['tool'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
      registers: [this.registry],
    });
    this.turnStages = new Histogram({
      name: 'switchboard_turn_stage_seconds',
      help: 'Each answer’s wait on one vendor: STT final after VAD stop, LLM first token after the request, TTS first audio after the first token, a speech-to-speech vendor’s first audio after it heard the caller.',
      labelNames: ['stage', 'vendor'],
      buckets: [0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5],
      registers: [this.registry],
    });
  }

  /** One stage of an answer (calls/turn-stages.ts), on the vendor it waited for. */
  turnStage(stage: string, vendor: string, ms: number): void {
    this.turnStages.observe({ stage, vendor }, ms / 1000);
  }

  /**
   * `switchboard_node_info{node_id="…"} 1`: which node these figures are from (the data dir's id,
   * which its recordings and the cluster view carry too), so several nodes' scrapes can be told apart and joined.
   */
  setNodeId(nodeId: string): void {
    new Gauge({
      name: 'switchboard_node_info',
      help: 'This node’s id (always 1).',
      labelNames: ['node_id'],
      registers: [this.registry],
    }).set({ node_id: nodeId }, 1);
  }

  /** A dial-out leg was answered (joined its room) or ended without joining. */
  dialoutLeg(outcome: 'answered' | 'busy' | 'no-answer' | 'failed' | 'canceled'): void {
    this.dialoutLegs.inc({ outcome });
  }

  callStarted(): void {
    this.callsActive.inc();
  }

  callEnded(reason: string, summary: CallSummary): void {
    this.callsActive.dec();
    // Reasons are a small fixed set (hang-up, max_duration, error, ...); free text would explode the label.
    this.callsEnded.inc({ reason: reason.length <= 32 ? reason : 'other' });
    this.bargeIns.inc(summary.bargeIns);
    this.providerErrors.inc(summary.providerErrors);
    this.droppedTranscripts.inc(summary.droppedTranscripts);
    for (const [name, figures] of Object.entries(summary.tools)) {
      // Function names are checked when saved (64 characters at most, letters, digits, _ and -).
      const tool = name.slice(0, 64);
      this.toolCalls.inc({ tool, result: 'ok' }, figures.calls - figures.failures);
      if (figures.failures > 0) this.toolCalls.inc({ tool, result: 'failed' }, figures.failures);
      for (const latencyMs of figures.latencyMs) this.toolLatency.observe({ tool }, latencyMs / 1000);
    }
    for (const turn of summary.perTurn) {
      if (turn.llmFirstTokenMs !== undefined)
        this.turnLatency.observe({ kind: turn.kind, stage: 'llm_first_token' }, turn.llmFirstTokenMs / 1000);
      if (turn.ttsFirstAudioMs !== undefined)
        this.turnLatency.observe({ kind: turn.kind, stage: 'tts_first_audio' }, turn.ttsFirstAudioMs / 1000);
      if (turn.firstFrameSentMs !== undefined)
        this.turnLatency.observe({ kind: turn.kind, stage: 'first_frame_sent' }, turn.firstFrameSentMs / 1000);
    }
  }

  observePlayoutTickLag(lagMs: number): void {
    this.playoutTickLag.observe(lagMs / 1000);
  }
}
