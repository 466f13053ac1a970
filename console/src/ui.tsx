import type { ComponentChildren } from 'preact';
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { ConsoleSettings, Loaded, LedgerError, Paged } from './api';
import { formatCents, formatTime, windowDateOf } from './format';

export const SettingsContext = createContext<ConsoleSettings | null>(null);

export function useSettings(): ConsoleSettings | null {
  return useContext(SettingsContext);
}

export function Money({ cents }: { cents: number }) {
  return <span class={`money${cents < 0 ? ' negative' : ''}`}>{formatCents(cents)}</span>;
}

/** A moment in the viewer's zone, with the Eastern settlement window it belongs to beside it. */
export function Time({ iso }: { iso: string | null | undefined }) {
  const settings = useSettings();
  if (!iso) return <span class="muted">—</span>;
  const window = windowDateOf(iso, settings?.settlement_cutoff ?? '00:00');
  return (
    <span class="time">
      <time dateTime={iso}>{formatTime(iso)}</time>{' '}
      <span class="window" title="Eastern settlement window">
        ET {window}
      </span>
    </span>
  );
}

export function Badge({ value }: { value: string }) {
  return <span class={`badge badge-${value}`}>{value.replace(/_/g, ' ')}</span>;
}

/** The API's message and request id, so a person can quote it; 404 reads as "not found" (ids of other organizations too). */
export function ErrorBox({ error, retry }: { error: LedgerError; retry?: () => void }) {
  const title = error.status === 404 ? 'Not found' : error.status === undefined ? 'No answer' : `Error ${error.status}`;
  return (
    <div class="error" role="alert">
      <strong>{title}</strong>
      <p>{error.message}</p>
      <p class="small">
        {error.code && <span>code {error.code}</span>}
        {error.requestId && (
          <span>
            {' '}
            · request id <code class="request-id">{error.requestId}</code>
          </span>
        )}
      </p>
      {retry && (error.status === undefined || error.status >= 429) && (
        <button type="button" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="loading" role="status">
      Loading {what}…
    </p>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

/** Loading, error or the content of a loaded value. */
export function Show<T>({
  state,
  what,
  retry,
  children,
}: {
  state: Loaded<T>;
  what: string;
  retry?: () => void;
  children: (data: T) => ComponentChildren;
}) {
  if (state.status === 'loading') return <Loading what={what} />;
  if (state.status === 'error') return <ErrorBox error={state.error} {...(retry ? { retry } : {})} />;
  return <>{children(state.data)}</>;
}

// Columns of amounts and counts, right-aligned like their values.
const NUMERIC =
  /^(Pending|Available|In transfer|Count|Amount|Cash in|Cash out|Net|Members|Attempt|Opening.*|Closing.*|Limit|Used|Left|New limit|Returned|Rate|Threshold)$/;

/** A table that scrolls sideways on a narrow screen; focusable so a keyboard can scroll it. */
export function Table({ caption, head, children }: { caption: string; head: string[]; children: ComponentChildren }) {
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label={caption}>
      <table>
        <caption class="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            {head.map((name) => (
              <th scope="col" key={name} class={NUMERIC.test(name) ? 'num' : undefined}>
                {name}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** The rows of a paged list so far, its states, and the button that asks for the next page. */
export function PagedTable<T>({
  list,
  caption,
  head,
  row,
  empty,
}: {
  list: Paged<T>;
  caption: string;
  head: string[];
  row: (item: T) => ComponentChildren;
  empty: string;
}) {
  return (
    <>
      {list.items.length > 0 && (
        <Table caption={caption} head={head}>
          {list.items.map(row)}
        </Table>
      )}
      {!list.loading && !list.error && list.items.length === 0 && <Empty>{empty}</Empty>}
      {list.loading && <Loading what={list.items.length > 0 ? 'the next page' : caption.toLowerCase()} />}
      {list.error && <ErrorBox error={list.error} retry={list.loadMore} />}
      <p class="paging" aria-live="polite">
        <span class="small">{list.items.length} shown</span>
        {list.hasMore && (
          <button type="button" onClick={list.loadMore} disabled={list.loading}>
            Load more
          </button>
        )}
      </p>
    </>
  );
}

/** A detail page's heading: the way back to its list, then what it shows, with its id. */
export function DetailHeading({ list, listTitle, title, id }: { list: string; listTitle: string; title: string; id: string }) {
  return (
    <>
      <p>
        <a href={`#/${list}`}>← {listTitle}</a>
      </p>
      <h1>
        {title} <code class="id">{id}</code>
      </h1>
    </>
  );
}

export function Fields({ rows }: { rows: [string, ComponentChildren][] }) {
  return (
    <dl class="fields">
      {rows.map(([name, value]) => (
        <div key={name}>
          <dt>{name}</dt>
          <dd>{value ?? <span class="muted">—</span>}</dd>
        </div>
      ))}
    </dl>
  );
}

export function Id({ value, href }: { value: string | null | undefined; href?: string }) {
  if (!value) return <span class="muted">—</span>;
  return href ? (
    <a href={href} class="id">
      {value}
    </a>
  ) : (
    <code class="id">{value}</code>
  );
}

export function Json({ value }: { value: unknown }) {
  return <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
}
