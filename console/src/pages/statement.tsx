import { useState } from 'preact/hooks';
import { api, asLedgerError, download, useLoad, type LedgerError, type Schemas } from '../api';
import { addDays, label } from '../format';
import { submitFilters } from '../route';
import { ErrorBox, Money, Show, Table, useSettings } from '../ui';

type Statement = Schemas['Statement'];

function BalancesTable({ statement }: { statement: Statement }) {
  const buckets = ['pending', 'available', 'in_transfer'] as const;
  return (
    <Table
      caption="Opening and closing balances"
      head={['Bucket', `Opening (start of ${statement.from})`, `Closing (end of ${statement.to})`]}
    >
      {buckets.map((bucket) => (
        <tr key={bucket}>
          <th scope="row">{label(bucket)}</th>
          <td class="num">
            <Money cents={statement.opening[bucket]} />
          </td>
          <td class="num">
            <Money cents={statement.closing[bucket]} />
          </td>
        </tr>
      ))}
    </Table>
  );
}

function TotalsTable({ statement }: { statement: Statement }) {
  return (
    <Table caption="Entries by kind" head={['Entry kind', 'Count', 'Amount']}>
      {Object.entries(statement.totals).map(([kind, total]) => (
        <tr key={kind}>
          <th scope="row">{label(kind)}</th>
          <td class="num">{total.count}</td>
          <td class="num">
            <Money cents={total.amount} />
          </td>
        </tr>
      ))}
    </Table>
  );
}

function CsvButton({ accountId, from, to }: { accountId: string; from: string; to: string }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<LedgerError | null>(null);
  const fetchCsv = async () => {
    setBusy(true);
    setError(null);
    try {
      const text = await api((ledger) => ledger.accounts.statement(accountId, { from, to, format: 'csv' }));
      download(`${accountId}-statement-${from}-${to}.csv`, typeof text === 'string' ? text : JSON.stringify(text));
    } catch (failure) {
      setError(asLedgerError(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" onClick={() => void fetchCsv()} disabled={busy}>
        {busy ? 'Preparing CSV…' : 'Download postings (CSV)'}
      </button>
      {error && <ErrorBox error={error} />}
    </>
  );
}

function StatementOf({ accountId, from, to }: { accountId: string; from: string; to: string }) {
  const [state, retry] = useLoad(
    () => api((ledger) => ledger.accounts.statement(accountId, { from, to })) as Promise<Statement>,
    [accountId, from, to],
  );
  return (
    <Show state={state} what="the statement" retry={retry}>
      {(statement) => (
        <section aria-labelledby="statement-title">
          <h2 id="statement-title">
            {statement.from} to {statement.to} (Eastern days)
          </h2>
          <BalancesTable statement={statement} />
          <TotalsTable statement={statement} />
          <CsvButton accountId={accountId} from={from} to={to} />
        </section>
      )}
    </Show>
  );
}

export function StatementPage({ query }: { query: URLSearchParams }) {
  const settings = useSettings();
  const [accounts, retry] = useLoad(() => api((ledger) => ledger.accounts.list({ limit: 100 })), []);
  const today = settings?.open_window.date ?? new Date().toISOString().slice(0, 10);
  const to = query.get('to') ?? today;
  const from = query.get('from') ?? addDays(to, -6);
  const submit = submitFilters('statement', ['account', 'from', 'to']);
  return (
    <>
      <h1>Statement</h1>
      <Show state={accounts} what="accounts" retry={retry}>
        {(page) => {
          const list = page.data;
          const accountId = query.get('account') ?? list[0]?.id ?? '';
          return (
            <>
              <form class="filters" onSubmit={submit} aria-label="Choose the statement's days" key={query.toString()}>
                <div class="field">
                  <label for="s-account">account</label>
                  <select id="s-account" name="account">
                    {list.map((account) => (
                      <option key={account.id} value={account.id} selected={account.id === accountId}>
                        {account.name}
                      </option>
                    ))}
                  </select>
                </div>
                <div class="field">
                  <label for="s-from">from (Eastern day)</label>
                  <input id="s-from" name="from" type="date" defaultValue={from} required />
                </div>
                <div class="field">
                  <label for="s-to">to (included)</label>
                  <input id="s-to" name="to" type="date" defaultValue={to} required />
                </div>
                <div class="actions">
                  <button type="submit">Show</button>
                </div>
              </form>
              {accountId && <StatementOf accountId={accountId} from={from} to={to} />}
            </>
          );
        }}
      </Show>
    </>
  );
}
