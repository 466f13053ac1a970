import { useState } from 'preact/hooks';
import { AchEntrySection } from '../achEntry';
import { api, useLoad, usePaged, type Schemas } from '../api';
import { label } from '../format';
import { formText, href } from '../route';
import { Badge, DetailHeading, Empty, Fields, Id, Json, Money, PagedTable, Show, Table, Time, useSettings } from '../ui';

type Transaction = Schemas['Transaction'];

const FILTERS = ['status', 'direction', 'type', 'date', 'user_id', 'account_id', 'transfer_id'] as const;
const CHOICES: Partial<Record<(typeof FILTERS)[number], string[]>> = {
  status: ['pending', 'available', 'in_transfer', 'settled'],
  direction: ['cash_in', 'cash_out'],
  type: ['intent', 'refund', 'dispute'],
};

/** `metadata[KEY]=VALUE` pairs of the page's query, as the list's `metadata` filter. */
function metadataOf(query: URLSearchParams): Record<string, string> {
  const metadata: Record<string, string> = {};
  for (const [name, value] of query) {
    const match = /^metadata\[(.+)\]$/.exec(name);
    if (match) metadata[match[1]!] = value;
  }
  return metadata;
}

function Filters({ query }: { query: URLSearchParams }) {
  const [pairs, setPairs] = useState<[string, string][]>(() => {
    const found = Object.entries(metadataOf(query));
    return found.length > 0 ? found : [['', '']];
  });
  const submit = (event: SubmitEvent) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const params: Record<string, string | undefined> = {};
    for (const name of FILTERS) params[name] = formText(form, name) || undefined;
    for (const [key, value] of pairs) if (key.trim()) params[`metadata[${key.trim()}]`] = value;
    location.hash = href('transactions', params);
  };
  const setPair = (i: number, which: 0 | 1, value: string) =>
    setPairs(pairs.map((pair, j) => (j === i ? (which === 0 ? [value, pair[1]] : [pair[0], value]) : pair)));
  return (
    <form class="filters" onSubmit={submit} aria-label="Filter transactions">
      {FILTERS.map((name) => (
        <div class="field" key={name}>
          <label for={`f-${name}`}>{label(name)}</label>
          {CHOICES[name] ? (
            <select id={`f-${name}`} name={name}>
              <option value="">any</option>
              {CHOICES[name].map((choice) => (
                <option key={choice} value={choice} selected={query.get(name) === choice}>
                  {label(choice)}
                </option>
              ))}
            </select>
          ) : name === 'date' ? (
            <input id={`f-${name}`} name={name} type="date" defaultValue={query.get(name) ?? ''} />
          ) : (
            <input id={`f-${name}`} name={name} type="text" defaultValue={query.get(name) ?? ''} spellcheck={false} />
          )}
        </div>
      ))}
      <fieldset class="metadata">
        <legend>Metadata (exact match; every pair must match)</legend>
        {pairs.map(([key, value], i) => (
          <div class="pair" key={i}>
            <label for={`mk-${i}`}>Key</label>
            <input id={`mk-${i}`} value={key} onInput={(e) => setPair(i, 0, e.currentTarget.value)} spellcheck={false} />
            <label for={`mv-${i}`}>Value</label>
            <input id={`mv-${i}`} value={value} onInput={(e) => setPair(i, 1, e.currentTarget.value)} spellcheck={false} />
          </div>
        ))}
        <button type="button" class="secondary" onClick={() => setPairs([...pairs, ['', '']])}>
          Add a metadata pair
        </button>
      </fieldset>
      <div class="actions">
        <button type="submit">Search</button>
        <a href="#/transactions">Clear</a>
      </div>
    </form>
  );
}

export function TransactionRow({ t }: { t: Transaction }) {
  return (
    <tr>
      <td>
        <Id value={t.id} href={`#/transactions/${t.id}`} />
      </td>
      <td class="num">
        <Money cents={t.amount} />
      </td>
      <td>
        <Badge value={t.status} />
      </td>
      <td>{label(t.direction)}</td>
      <td>{t.type}</td>
      <td>
        <Time iso={t.created_at} />
      </td>
    </tr>
  );
}

export const TRANSACTION_HEAD = ['Id', 'Amount', 'Status', 'Direction', 'Type', 'Created'];

function TransactionList({ query }: { query: URLSearchParams }) {
  const filters: Record<string, unknown> = {};
  for (const name of FILTERS) if (query.get(name)) filters[name] = query.get(name);
  const metadata = metadataOf(query);
  if (Object.keys(metadata).length > 0) filters.metadata = metadata;
  const key = query.toString();
  const list = usePaged<Transaction>(
    (cursor) => api((ledger) => ledger.transactions.list({ ...filters, limit: 25, ...(cursor ? { cursor } : {}) })),
    [key],
  );
  return (
    <>
      <h1>Transactions</h1>
      <Filters query={query} key={key} />
      <PagedTable
        list={list}
        caption="Transactions"
        head={TRANSACTION_HEAD}
        row={(t) => <TransactionRow t={t} key={t.id} />}
        empty="No transactions match."
      />
    </>
  );
}

async function sourceOf(t: Transaction): Promise<unknown> {
  if (!t.source_id) return null;
  if (t.type === 'intent') return api((ledger) => ledger.intents.retrieve(t.source_id!));
  if (t.type === 'refund') return api((ledger) => ledger.refunds.retrieve(t.source_id!));
  return api((ledger) => ledger.disputes.retrieve(t.source_id!));
}

/** The intent, refund or dispute behind a transaction: what a person looks for first, then all of it. */
function Source({ value }: { value: Record<string, unknown> }) {
  const text = (name: string) => (typeof value[name] === 'string' ? value[name] : null);
  const metadata = (value.metadata ?? {}) as Record<string, string>;
  const userId = text('user_id');
  return (
    <>
      <Fields
        rows={[
          ['Status', text('status') ? <Badge value={text('status')!} /> : null],
          ['Amount', typeof value.amount === 'number' ? <Money cents={value.amount} /> : null],
          ['User', userId ? <Id value={userId} href={`#/users/${userId}`} /> : null],
          ['Created', <Time iso={text('created_at')} />],
          [
            'Metadata',
            Object.keys(metadata).length === 0 ? null : (
              <ul class="plain">
                {Object.entries(metadata).map(([key, item]) => (
                  <li key={key}>
                    <code>{key}</code> = {item}
                  </li>
                ))}
              </ul>
            ),
          ],
        ]}
      />
      <details>
        <summary>Everything the API answered</summary>
        <Json value={value} />
      </details>
    </>
  );
}

function Timeline({ id }: { id: string }) {
  const [state, retry] = useLoad(() => api((ledger) => ledger.events.list({ object_id: id, limit: 100 })), [id]);
  return (
    <section aria-labelledby="timeline-title">
      <h2 id="timeline-title">Events</h2>
      <Show state={state} what="events" retry={retry}>
        {(page) =>
          page.data.length === 0 ? (
            <Empty>No events within the retention period.</Empty>
          ) : (
            <ol class="timeline">
              {[...page.data].reverse().map((event) => (
                <li key={event.id}>
                  <Time iso={event.created_at} /> <a href={`#/events/${event.id}`}>{event.type}</a>
                  {'status' in event.data && (
                    <>
                      {' '}
                      {'previous_status' in event.data && <>{label(event.data.previous_status)} → </>}
                      <Badge value={event.data.status} />
                    </>
                  )}
                </li>
              ))}
            </ol>
          )
        }
      </Show>
    </section>
  );
}

function Entries({ t }: { t: Transaction }) {
  const [state, retry] = useLoad(
    () => api((ledger) => ledger.accounts.entries(t.account_id, { transaction_id: t.id, limit: 100 })),
    [t.id],
  );
  return (
    <section aria-labelledby="entries-title">
      <h2 id="entries-title">Journal entries</h2>
      <Show state={state} what="journal entries" retry={retry}>
        {(page) =>
          page.data.length === 0 ? (
            <Empty>No journal entries.</Empty>
          ) : (
            <Table caption="Journal entries" head={['Entry', 'Kind', 'Postings', 'Created']}>
              {page.data.map((entry) => (
                <tr key={entry.id}>
                  <td>
                    <code class="id">{entry.id}</code>
                  </td>
                  <td>{label(entry.kind)}</td>
                  <td>
                    {entry.postings.map((posting) => (
                      <div key={posting.bucket}>
                        {posting.bucket} <Money cents={posting.amount} />
                      </div>
                    ))}
                  </td>
                  <td>
                    <Time iso={entry.created_at} />
                  </td>
                </tr>
              ))}
            </Table>
          )
        }
      </Show>
    </section>
  );
}

function TransactionDetail({ id }: { id: string }) {
  const settings = useSettings();
  const [state, retry] = useLoad(() => api((ledger) => ledger.transactions.retrieve(id)), [id]);
  const [source] = useLoad(async () => (state.status === 'ok' ? sourceOf(state.data) : null), [state.status]);
  return (
    <>
      <DetailHeading list="transactions" listTitle="Transactions" title="Transaction" id={id} />
      <Show state={state} what="the transaction" retry={retry}>
        {(t) => (
          <>
            <Fields
              rows={[
                ['Amount', <Money cents={t.amount} />],
                ['Direction', label(t.direction)],
                ['Status', <Badge value={t.status} />],
                ['Type', t.type],
                ['Window (Eastern)', t.date],
                ['Created', <Time iso={t.created_at} />],
                ['Account', <code class="id">{t.account_id}</code>],
                ['Transfer', t.transfer ? <Id value={t.transfer.id} href={`#/transfers/${t.transfer.id}`} /> : null],
                [
                  'Workflow',
                  settings?.temporal_ui_url ? (
                    <a
                      href={`${settings.temporal_ui_url}/namespaces/${encodeURIComponent(settings.temporal_namespace)}/workflows/${encodeURIComponent(t.id)}`}
                      target="_blank"
                      rel="noopener noreferrer"
                    >
                      Open in the Temporal UI
                    </a>
                  ) : (
                    <span class="muted">no Temporal UI configured (TEMPORAL_UI_URL)</span>
                  ),
                ],
              ]}
            />
            <section aria-labelledby="source-title">
              <h2 id="source-title">
                Source: {t.type} <Id value={t.source_id} />
              </h2>
              <Show state={source} what="the source">
                {(value) => (value ? <Source value={value as Record<string, unknown>} /> : <Empty>No source.</Empty>)}
              </Show>
            </section>
            <AchEntrySection kind="transaction" id={t.id} />
            <Timeline id={t.id} />
            <Entries t={t} />
          </>
        )}
      </Show>
    </>
  );
}

export function TransactionsPage({ id, query }: { id: string | undefined; query: URLSearchParams }) {
  return id ? <TransactionDetail id={id} /> : <TransactionList query={query} />;
}
