/**
 * The calling side of a worker thread that answers requests by id: each request carries a fresh
 * id, and the worker posts back that id with its answer or with `error` (a message). The worker
 * (startModuleWorker) starts on first use and is unref'd, so it never keeps the process alive; if
 * it dies, every request in flight fails and the next request starts a new one.
 */

import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from './worker-thread.js';

interface Pending<Result> {
  resolve: (result: Result) => void;
  reject: (error: unknown) => void;
}

export interface WorkerRpcOptions<Response, Result> {
  /** The folder the worker module is in (`moduleDirUrl` for the package's own workers). */
  besideUrl: string;
  /** The worker module's file name without extension, e.g. `flite-worker`. */
  name: string;
  /** What a request resolves to, from the worker's answer (a response without `error`). */
  result: (response: Exclude<Response, { error: string }>) => Result;
  /**
   * Stops the worker once nothing has been pending for this many milliseconds (read each time the
   * last request settles); a new request cancels the countdown. Without it the worker stays.
   */
  idleMs?: () => number;
}

export class WorkerRpc<Request extends { id: number }, Response extends { id: number }, Result> {
  #worker: Worker | undefined;
  readonly #pending = new Map<number, Pending<Result>>();
  #nextId = 1;
  #idleTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: WorkerRpcOptions<Response, Result>) {}

  /** Whether the worker is loaded (tests, benchmarks). */
  get loaded(): boolean {
    return this.#worker !== undefined;
  }

  /** Starts the worker ahead of the first request, so that request does not wait for it. */
  warm(): void {
    this.#current();
  }

  /**
   * Posts `request` with a fresh id. An abort of `signal` rejects at once with its reason; the
   * worker finishes that request anyway and its answer finds no one waiting.
   */
  request(request: Omit<Request, 'id'>, signal?: AbortSignal): Promise<Result> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const id = this.#nextId++;
    return new Promise<Result>((resolve, reject) => {
      const onAbort = () => {
        this.#settled(id);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#pending.set(id, {
        resolve: (result) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(result);
        },
        reject: (error) => {
          signal?.removeEventListener('abort', onAbort);
          reject(error);
        },
      });
      clearTimeout(this.#idleTimer);
      this.#current().postMessage({ ...request, id });
    });
  }

  #current(): Worker {
    if (this.#worker) return this.#worker;
    const { besideUrl, name, result } = this.options;
    const started = startModuleWorker(besideUrl, name);
    started.on('message', (response: Response) => {
      const entry = this.#pending.get(response.id);
      if (!entry) return;
      this.#settled(response.id);
      if ('error' in response) entry.reject(new Error(String(response.error)));
      else entry.resolve(result(response as Exclude<Response, { error: string }>));
    });
    const onGone = (error: Error) => {
      if (this.#worker !== started) return;
      this.#worker = undefined;
      const failed = [...this.#pending.values()];
      this.#pending.clear();
      for (const entry of failed) entry.reject(error);
    };
    started.on('error', onGone);
    started.on('exit', (code) => onGone(new Error(`${name.replaceAll('-', ' ')} exited (code ${code})`)));
    // After the listeners: adding a 'message' listener refs the worker's port again.
    started.unref();
    this.#worker = started;
    return started;
  }

  /** Forgets request `id`; when it was the last one, starts the idle countdown (if any). */
  #settled(id: number): void {
    this.#pending.delete(id);
    const { idleMs } = this.options;
    if (!idleMs || this.#pending.size > 0 || !this.#worker) return;
    clearTimeout(this.#idleTimer);
    const idle = this.#worker;
    this.#idleTimer = setTimeout(() => {
      if (this.#worker !== idle || this.#pending.size > 0) return;
      this.#worker = undefined;
      // Terminating interrupts the worker mid-task: only for workers whose work is pure
      // JavaScript or WebAssembly, with no native call to interrupt.
      void idle.terminate();
    }, idleMs());
    this.#idleTimer.unref();
  }
}
