import { useEffect, useState } from 'preact/hooks';

/** The page and its parameters, from the location's hash: `#/transactions?status=pending`, `#/transactions/txn_…`. */
export interface Route {
  path: string[];
  query: URLSearchParams;
}

function current(): Route {
  const hash = location.hash.replace(/^#\/?/, '');
  const [path = '', query = ''] = hash.split('?', 2);
  return { path: path.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(query) };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(current);
  useEffect(() => {
    const changed = () => setRoute(current());
    addEventListener('hashchange', changed);
    return () => removeEventListener('hashchange', changed);
  }, []);
  return route;
}

/** `#/page/id?name=value`, leaving out empty parameters. */
export function href(path: string, query: Record<string, string | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value) params.append(name, value);
  const text = params.toString();
  return `#/${path}${text ? `?${text}` : ''}`;
}

/** A text field of a submitted form, trimmed ('' when absent). */
export function formText(form: FormData, name: string): string {
  const value = form.get(name);
  return typeof value === 'string' ? value.trim() : '';
}

/** A filter form's submit: the page again with the form's fields `names` as its query (empty ones left out). */
export function submitFilters(path: string, names: readonly string[]): (event: SubmitEvent) => void {
  return (event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    location.hash = href(path, Object.fromEntries(names.map((name) => [name, formText(form, name)])));
  };
}

const PAGE_OF_PREFIX: [string, string][] = [
  ['txn_', 'transactions'],
  ['user_', 'users'],
  ['transfer_', 'transfers'],
  ['evt_', 'events'],
  ['whk_', 'webhooks'],
];

/** The console page of an id the console shows (a transaction, user, transfer, event or endpoint), if any. */
export function pageOf(id: string): string | undefined {
  const page = PAGE_OF_PREFIX.find(([prefix]) => id.startsWith(prefix))?.[1];
  return page ? `#/${page}/${encodeURIComponent(id)}` : undefined;
}
