import { performance } from 'node:perf_hooks';
import ipaddr from 'ipaddr.js';
import pg from 'pg';
import type { Logger } from 'pino';
import type { Pool } from '../db/pool';
import type { Environment, Organization } from './apiKeys';
import { EDGE_LIMITS } from './limits';

/**
 * What admission needs to know about a key, kept in memory so that an authenticated request costs no database
 * round trip (SPEC §4; the argument is in docs/edge.md). Correct only while Postgres can tell us about every
 * change: a LISTEN connection hears `ledger_edge` (migrations/0013_edge_leases.sql), and the cache answers
 * only while that connection has proved, within the last `keyCacheStaleMs`, that it delivers what was committed.
 * Otherwise it answers nothing and every request asks the database, as it did before there was a cache.
 */

export type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

export interface CachedKey {
  keyId: string;
  keyHash: Buffer;
  environment: Environment;
  organization: Organization;
  /** Parsed once; empty = no check. */
  allowlist: Cidr[];
}

export interface KeyCacheStats {
  /** Answers from memory are allowed right now. */
  on: boolean;
  /** Times the listener (re)connected and the cache started again from empty. */
  resyncs: number;
  /** Times the cache was switched off because its listener failed or fell silent. */
  drops: number;
  /** Lookups answered from memory. */
  hits: number;
  /** The listener's Postgres backend, for tests that kill it. */
  listenerPid: number | null;
  keys: number;
}

const CHANNEL = 'ledger_edge';

/** An address as the allowlist and failure buckets compare it: ipaddr's canonical text. */
export function canonicalAddress(text: string): string {
  try {
    return ipaddr.parse(text).toString();
  } catch {
    return text;
  }
}

export class KeyCache {
  private readonly keys = new Map<string, CachedKey>();
  /** Failure buckets that reached the failed-auth limit: their failures' times (ms), oldest first. */
  private readonly blocked = new Map<string, number[]>();
  /** Bumped by every message and every drop; a lookup that began under another version is not cached. */
  private version = 0;
  private client: pg.Client | null = null;
  private listening = false;
  /** performance.now() at which the newest completed heartbeat was sent: everything committed before it has been heard. */
  private confirmedAtMs = Number.NEGATIVE_INFINITY;
  private heartbeat: NodeJS.Timeout | null = null;
  private heartbeatInFlight = false;
  private reconnect: NodeJS.Timeout | null = null;
  private reconnectDelayMs: number = EDGE_LIMITS.keyCacheReconnectMsMin;
  private closed = false;
  private readonly counters = { resyncs: 0, drops: 0, hits: 0 };
  private listenerPid: number | null = null;

  constructor(
    private readonly pool: Pool,
    private readonly log: Logger,
  ) {}

  start(): void {
    void this.connect();
  }

  /** True while memory may answer: the listener is connected and has proved itself recently. */
  on(): boolean {
    return this.listening && performance.now() - this.confirmedAtMs < EDGE_LIMITS.keyCacheStaleMs;
  }

  stats(): KeyCacheStats {
    return { on: this.on(), ...this.counters, listenerPid: this.listenerPid, keys: this.keys.size };
  }

  get(keyHashHex: string): CachedKey | undefined {
    const entry = this.on() ? this.keys.get(keyHashHex) : undefined;
    if (entry) this.counters.hits++;
    return entry;
  }

  /** Taken before a database lookup; `put` keeps the answer only if nothing was heard meanwhile. */
  lookupVersion(): number {
    return this.version;
  }

  put(keyHashHex: string, entry: CachedKey, version: number): void {
    if (version !== this.version || !this.on()) return;
    // A bound on memory; refilling costs one lookup per key.
    if (this.keys.size >= EDGE_LIMITS.keyCacheEntriesMax) this.keys.clear();
    this.keys.set(keyHashHex, entry);
  }

  /**
   * The oldest counted failure (ms) if `bucket` has reached the failed-auth limit in the window ending at
   * `nowMs`, else null. Meaningful only while the cache is on.
   */
  blockedSince(bucket: string, nowMs: number): number | null {
    const failures = this.blocked.get(bucket);
    if (!failures) return null;
    const inWindow = failures.filter((at) => at > nowMs - EDGE_LIMITS.windowMs);
    if (failures.every((at) => at <= nowMs - EDGE_LIMITS.windowMs)) this.blocked.delete(bucket);
    return inWindow.length >= EDGE_LIMITS.authFailuresPerWindow ? inWindow[0]! : null;
  }

  /** The database's list of a bucket's failures in the window (oldest first), as an answer brought it. */
  recordFailures(bucket: string, failures: Date[]): void {
    if (failures.length < EDGE_LIMITS.authFailuresPerWindow) {
      this.blocked.delete(bucket);
      return;
    }
    if (this.blocked.size >= EDGE_LIMITS.keyCacheEntriesMax) this.blocked.clear();
    this.blocked.set(
      bucket,
      failures.map((at) => at.getTime()),
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnect) clearTimeout(this.reconnect);
    if (this.heartbeat) clearInterval(this.heartbeat);
    const client = this.client;
    this.switchOff();
    if (client) await client.end().catch(() => undefined);
  }

  private switchOff(): void {
    this.listening = false;
    this.client = null;
    this.listenerPid = null;
    this.keys.clear();
    this.blocked.clear();
    this.version++;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  /** The listener failed, ended or fell silent: off until a new one is listening and the cache starts empty. */
  private drop(client: pg.Client, error?: unknown): void {
    if (this.client !== client) return;
    if (!this.closed) this.log.warn({ err: error }, 'edge key cache off: its LISTEN connection was lost; reconnecting');
    this.counters.drops++;
    this.switchOff();
    client.end().catch(() => undefined);
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnect) return;
    const delayMs = this.reconnectDelayMs;
    this.reconnectDelayMs = Math.min(delayMs * 2, EDGE_LIMITS.keyCacheReconnectMsMax);
    this.reconnect = setTimeout(() => {
      this.reconnect = null;
      void this.connect();
    }, delayMs);
    this.reconnect.unref();
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({
      ...this.pool.options,
      application_name: 'ledger-edge-listener',
      connectionTimeoutMillis: EDGE_LIMITS.keyCacheConnectTimeoutMs,
    });
    this.client = client;
    client.on('error', (error) => this.drop(client, error));
    client.on('end', () => this.drop(client, new Error('connection ended')));
    client.on('notification', (message) => {
      if (this.client === client) this.hear(message.payload);
    });
    try {
      await client.connect();
      const listenSentAtMs = performance.now();
      await client.query(`LISTEN ${CHANNEL}`);
      const { rows: pid } = await client.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`);
      // Blocks announced while nobody listened: every bucket now at the limit, as the database counts it.
      const { rows: blocked } = await client.query<{ ip: string; failures: Date[] }>(
        `SELECT host(ip) AS ip, array_agg(failed_at ORDER BY failed_at) AS failures FROM auth_failures
          GROUP BY ip HAVING count(*) >= $1 LIMIT $2`,
        [EDGE_LIMITS.authFailuresPerWindow, EDGE_LIMITS.keyCacheEntriesMax],
      );
      if (this.client !== client || this.closed) {
        // Closed (or dropped) while connecting: this connection is nobody's.
        await client.end().catch(() => undefined);
        return;
      }
      this.keys.clear();
      this.blocked.clear();
      this.version++;
      for (const row of blocked) this.recordFailures(canonicalAddress(row.ip), row.failures);
      this.listenerPid = pid[0]!.pid;
      this.confirmedAtMs = listenSentAtMs;
      this.listening = true;
      this.reconnectDelayMs = EDGE_LIMITS.keyCacheReconnectMsMin;
      this.counters.resyncs++;
      this.heartbeat = setInterval(() => void this.beat(client), EDGE_LIMITS.keyCacheHeartbeatMs);
      this.heartbeat.unref();
    } catch (error) {
      this.drop(client, error);
    }
  }

  /**
   * Postgres sends a listener what was committed before the listener's own query ends, so a completed
   * heartbeat proves every change committed before it was sent has been heard. One that does not complete
   * in time means a connection that is silently gone: drop it rather than trust it.
   */
  private async beat(client: pg.Client): Promise<void> {
    if (this.heartbeatInFlight || this.client !== client) return;
    this.heartbeatInFlight = true;
    const sentAtMs = performance.now();
    const deadline = setTimeout(() => this.drop(client, new Error('heartbeat unanswered')), EDGE_LIMITS.keyCacheHeartbeatTimeoutMs);
    deadline.unref();
    try {
      await client.query('SELECT 1');
      if (this.client === client) this.confirmedAtMs = sentAtMs;
    } catch (error) {
      this.drop(client, error);
    } finally {
      clearTimeout(deadline);
      this.heartbeatInFlight = false;
    }
  }

  private hear(payload: string | undefined): void {
    this.version++;
    let message: { organization_id?: string; auth_blocked?: string; flush?: string };
    try {
      message = JSON.parse(payload ?? '{}') as typeof message;
    } catch {
      message = { flush: 'unreadable message' };
    }
    if (message.organization_id !== undefined) {
      for (const [hash, entry] of this.keys) if (entry.organization.id === message.organization_id) this.keys.delete(hash);
    } else if (message.auth_blocked !== undefined) {
      void this.refreshBucket(canonicalAddress(message.auth_blocked));
    } else {
      this.keys.clear();
    }
  }

  private async refreshBucket(bucket: string): Promise<void> {
    try {
      const { rows } = await this.pool.query<{ failures: Date[] | null }>(
        `SELECT array_agg(failed_at ORDER BY failed_at) AS failures FROM auth_failures WHERE ip = $1::inet`,
        [bucket],
      );
      this.recordFailures(bucket, rows[0]?.failures ?? []);
    } catch (error) {
      // Without the list this process cannot refuse the address's valid keys: stop answering from memory.
      if (this.client) this.drop(this.client, error);
    }
  }
}
