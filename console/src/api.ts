import { AuthenticationError, Ledger, LedgerError, PermissionError, type Page, type Schemas } from '@payments-ledger/sdk';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export type { Schemas };
export { LedgerError };

/** What /console/config.json says: where the Temporal UI is and the open settlement window (src/console/serve.ts). */
export interface ConsoleSettings {
  environment: string;
  temporal_ui_url: string | null;
  temporal_namespace: string;
  settlement_cutoff: string;
  settlement_calendar: string;
  now: string;
  open_window: { date: string; opened_at: string; closes_at: string; transfer_date: string };
}

export interface Session {
  apiKey: string;
  organizationName: string;
  organizationId: string;
  environment: string;
}

// The key lives only in this tab's sessionStorage: closing the tab forgets it.
const SESSION = 'ledger-console.session';

export function loadSession(): Session | null {
  try {
    const raw = sessionStorage.getItem(SESSION);
    return raw === null ? null : (JSON.parse(raw) as Session);
  } catch {
    return null;
  }
}

export function saveSession(session: Session | null): void {
  if (session === null) sessionStorage.removeItem(SESSION);
  else sessionStorage.setItem(SESSION, JSON.stringify(session));
}

let client: Ledger | null = null;
let unauthorized: (error: LedgerError) => void = () => undefined;

/** The SDK client for the signed-in key; `onUnauthorized` runs when the API refuses it (revoked, unknown). */
export function setKey(apiKey: string | null, onUnauthorized: (error: LedgerError) => void): void {
  client = apiKey === null ? null : new Ledger({ apiKey, baseUrl: location.origin, maxRetries: 1 });
  unauthorized = onUnauthorized;
}

/**
 * Checks a key with POST /keys/verify, without keeping it. That is a write, which an organization's IP allowlist
 * refuses (403) from other addresses: there a read (GET /account) proves the key instead, and the console reads.
 */
export async function verifyKey(apiKey: string): Promise<Session> {
  const probe = new Ledger({ apiKey, baseUrl: location.origin, maxRetries: 0 });
  try {
    const answer = await probe.keys.verify({ idempotencyKey: idempotencyKey() });
    return { apiKey, organizationName: answer.organization_name, organizationId: answer.organization_id, environment: answer.environment };
  } catch (error) {
    if (!(error instanceof PermissionError)) throw error;
    await probe.accounts.list({ limit: 1 });
    const environment = apiKey.startsWith('sk_production_') ? 'production' : 'sandbox';
    return { apiKey, organizationName: 'reads only from this address', organizationId: '', environment };
  }
}

/** A fresh `X-Idempotency-Key` (crypto.randomUUID needs a secure context; getRandomValues does not). */
export function idempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `console-${Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('')}`;
}

export function asLedgerError(error: unknown): LedgerError {
  if (error instanceof LedgerError) return error;
  return new LedgerError({ type: 'console_error', code: 'unexpected', message: error instanceof Error ? error.message : String(error) });
}

/** One call with the signed-in key; a 401 signs the console out. */
export async function api<T>(run: (ledger: Ledger) => PromiseLike<T>): Promise<T> {
  if (client === null) throw new LedgerError({ type: 'authentication_error', code: 'unauthenticated', message: 'Not signed in.' });
  try {
    return await run(client);
  } catch (error) {
    if (error instanceof AuthenticationError) unauthorized(error);
    throw asLedgerError(error);
  }
}

export async function loadSettings(): Promise<ConsoleSettings> {
  const response = await fetch('/console/config.json', { headers: { Accept: 'application/json' } });
  if (!response.ok) throw new LedgerError({ type: 'api_error', code: 'unavailable', message: `config.json answered ${response.status}` });
  return (await response.json()) as ConsoleSettings;
}

export type Loaded<T> = { status: 'loading' } | { status: 'error'; error: LedgerError } | { status: 'ok'; data: T };

/** Runs `load` whenever `deps` change; the answer of an older run never overwrites a newer one. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): [Loaded<T>, () => void] {
  const [state, setState] = useState<Loaded<T>>({ status: 'loading' });
  const [round, setRound] = useState(0);
  useEffect(() => {
    let live = true;
    setState({ status: 'loading' });
    load().then(
      (data) => live && setState({ status: 'ok', data }),
      (error: unknown) => live && setState({ status: 'error', error: asLedgerError(error) }),
    );
    return () => {
      live = false;
    };
  }, [...deps, round]);
  return [state, useCallback(() => setRound((n) => n + 1), [])];
}

export interface Paged<T> {
  items: T[];
  hasMore: boolean;
  loading: boolean;
  error: LedgerError | null;
  loadMore: () => void;
}

/**
 * A list read a page at a time (SPEC §8): the first page when `deps` change, then each next page only when
 * asked, with the previous page's `next_cursor`. Pages already shown are kept, never fetched again.
 */
export function usePaged<T>(fetchPage: (cursor: string | undefined) => PromiseLike<Page<T>>, deps: unknown[]): Paged<T> {
  const [state, setState] = useState<{ items: T[]; cursor: string | null; hasMore: boolean; loading: boolean; error: LedgerError | null }>({
    items: [],
    cursor: null,
    hasMore: false,
    loading: true,
    error: null,
  });
  const generation = useRef(0);
  const run = (cursor: string | undefined, keep: T[]) => {
    const mine = ++generation.current;
    setState((s) => ({ ...s, items: keep, loading: true, error: null }));
    api(() => fetchPage(cursor)).then(
      (page) => {
        if (mine !== generation.current) return;
        setState({ items: [...keep, ...page.data], cursor: page.next_cursor, hasMore: page.has_more, loading: false, error: null });
      },
      (error: unknown) => {
        if (mine !== generation.current) return;
        setState((s) => ({ ...s, loading: false, error: asLedgerError(error) }));
      },
    );
  };
  useEffect(() => {
    run(undefined, []);
  }, deps);
  return {
    ...state,
    loadMore: () => {
      if (state.cursor !== null && !state.loading) run(state.cursor, state.items);
    },
  };
}

/** Saves text the API answered (a CSV) as a file, without a second request. */
export function download(filename: string, text: string, type = 'text/csv'): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
