import { randomUUID } from 'node:crypto';

/**
 * A careful integrator's HTTP client: every POST carries an X-Idempotency-Key; a transport error, a timeout,
 * a 5xx, a 429 or a 409 `idempotency_request_in_progress` is retried with the same key (and the same bytes)
 * until a definite answer. Every answer is kept as received (the raw text, for byte-for-byte comparisons)
 * and reported to the recorder with its start and end, so 5xx answers can be matched against fault windows.
 * Once the recorder says the run is halted (its first divergence is found), every call ends with `Halted`
 * instead of retrying on: a 500 that a bug makes permanent would otherwise hold a client for GIVE_UP_AFTER_MS.
 */
export interface Answer {
  status: number;
  text: string;
  json: Json;
  sentAt: number;
  receivedAt: number;
}

// The API's JSON as read by the simulation: fields are looked up and checked, never trusted for shape.
export type Json = any;

export interface Recorder {
  answer(entry: { method: string; path: string; status: number; at: number }): void;
  gaveUp(entry: { method: string; path: string; reason: string }): void;
  /** Why the run stopped at a divergence, or null while it goes on. */
  halted(): string | null;
}

/** A call given up because the run already diverged (Recorder.halted). */
export class Halted extends Error {}

const ATTEMPT_TIMEOUT_MS = 20_000;
const GIVE_UP_AFTER_MS = 240_000;

function retryable(status: number, text: string): boolean {
  return status >= 500 || status === 429 || (status === 409 && text.includes('idempotency_request_in_progress'));
}

export class Api {
  constructor(
    readonly baseUrl: string,
    private readonly apiKey: string,
    private readonly recorder: Recorder,
  ) {}

  static newKey(): string {
    return `sim-${randomUUID()}`;
  }

  /** Whether the run stopped at a divergence: clients and checks end instead of going on. */
  isHalted(): boolean {
    return this.recorder.halted() !== null;
  }

  /** One request, retried as a careful integrator does; the key defaults to a new one for POSTs. */
  async call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown, key?: string): Promise<Answer> {
    const bytes = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { authorization: `Bearer ${this.apiKey}` };
    if (bytes !== undefined) headers['content-type'] = 'application/json';
    if (method === 'POST') headers['x-idempotency-key'] = key ?? Api.newKey();
    const firstSent = Date.now();
    let delayMs = 100;
    for (;;) {
      const halted = this.recorder.halted();
      if (halted !== null) throw new Halted(`${method} ${path}: the run halted (${halted})`);
      const sentAt = Date.now();
      let reason: string;
      try {
        const response = await fetch(`${this.baseUrl}${path}`, {
          method,
          headers,
          ...(bytes === undefined ? {} : { body: bytes }),
          signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
        });
        const text = await response.text();
        const receivedAt = Date.now();
        this.recorder.answer({ method, path, status: response.status, at: receivedAt });
        if (!retryable(response.status, text)) return { status: response.status, text, json: parse(text), sentAt, receivedAt };
        reason = `${response.status} ${text.slice(0, 200)}`;
      } catch (error) {
        reason = (error as Error).message;
      }
      if (Date.now() - firstSent > GIVE_UP_AFTER_MS) {
        this.recorder.gaveUp({ method, path, reason });
        throw new Error(`${method} ${path}: no definite answer in ${GIVE_UP_AFTER_MS / 1000} s (last: ${reason})`);
      }
      await sleep(delayMs);
      delayMs = Math.min(delayMs * 2, 2_000);
    }
  }

  /** Every item of a list endpoint, page by page. */
  async all(path: string): Promise<Json[]> {
    const items: Json[] = [];
    let cursor: string | null = null;
    const joiner = path.includes('?') ? '&' : '?';
    do {
      const answer = await this.call('GET', `${path}${joiner}limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      if (answer.status !== 200) throw new Error(`GET ${path} answered ${answer.status}: ${answer.text.slice(0, 300)}`);
      items.push(...(answer.json.data as Json[]));
      cursor = answer.json.has_more ? (answer.json.next_cursor as string) : null;
    } while (cursor);
    return items;
  }
}

function parse(text: string): Json {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
