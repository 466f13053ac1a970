import { useState } from 'preact/hooks';
import { AchEntrySection } from '../achEntry';
import { api, asLedgerError, download, useLoad, usePaged, type LedgerError, type Schemas } from '../api';
import { submitFilters } from '../route';
import { Badge, DetailHeading, ErrorBox, Fields, Id, Money, PagedTable, Show, Table, Time } from '../ui';
import { TRANSACTION_HEAD, TransactionRow } from './transactions';

type Transfer = Schemas['Transfer'];
type Transaction = Schemas['Transaction'];
type Totals = Schemas['TransferReportTotals'];
type Report = Schemas['TransferReport'];

function TransferList({ query }: { query: URLSearchParams }) {
  const status = query.get('status') ?? '';
  const date = query.get('date') ?? '';
  const list = usePaged<Transfer>(
    (cursor) =>
      api((ledger) =>
        ledger.transfers.list({
          limit: 25,
          ...(status ? { status: status as Transfer['status'] } : {}),
          ...(date ? { date } : {}),
          ...(cursor ? { cursor } : {}),
        }),
      ),
    [status, date],
  );
  const submit = submitFilters('transfers', ['status', 'date']);
  return (
    <>
      <h1>Transfers</h1>
      <form class="filters" onSubmit={submit} aria-label="Filter transfers" key={query.toString()}>
        <div class="field">
          <label for="t-status">status</label>
          <select id="t-status" name="status">
            <option value="">any</option>
            <option value="pending" selected={status === 'pending'}>
              pending
            </option>
            <option value="settled" selected={status === 'settled'}>
              settled
            </option>
          </select>
        </div>
        <div class="field">
          <label for="t-date">settlement date</label>
          <input id="t-date" name="date" type="date" defaultValue={date} />
        </div>
        <div class="actions">
          <button type="submit">Search</button>
        </div>
      </form>
      <PagedTable
        list={list}
        caption="Transfers"
        head={['Id', 'Amount', 'Status', 'Direction', 'Window', 'Date', 'Members', 'Created']}
        empty="No transfers yet: a window's close creates one."
        row={(t) => (
          <tr key={t.id}>
            <td>
              <Id value={t.id} href={`#/transfers/${t.id}`} />
            </td>
            <td class="num">
              <Money cents={t.amount} />
            </td>
            <td>
              <Badge value={t.status} />
            </td>
            <td>{t.direction}</td>
            <td>{t.window_date}</td>
            <td>{t.date}</td>
            <td class="num">{t.transaction_count}</td>
            <td>
              <Time iso={t.created_at} />
            </td>
          </tr>
        )}
      />
    </>
  );
}

function TotalsTable({ totals }: { totals: Totals }) {
  const rows: [string, Totals['cash_in'], Totals['cash_out'], number][] = [
    ['All', totals.cash_in, totals.cash_out, totals.net],
    ...(['intent', 'refund', 'dispute'] as const).map(
      (type) =>
        [type, totals.by_type[type].cash_in, totals.by_type[type].cash_out, totals.by_type[type].net] as [
          string,
          Totals['cash_in'],
          Totals['cash_out'],
          number,
        ],
    ),
  ];
  return (
    <Table caption="Report totals" head={['Type', 'Cash in', 'Cash out', 'Net']}>
      {rows.map(([type, cashIn, cashOut, net]) => (
        <tr key={type}>
          <th scope="row">{type}</th>
          <td class="num">
            {cashIn.count} · <Money cents={cashIn.amount} />
          </td>
          <td class="num">
            {cashOut.count} · <Money cents={cashOut.amount} />
          </td>
          <td class="num">
            <Money cents={net} />
          </td>
        </tr>
      ))}
    </Table>
  );
}

function CsvButton({ id }: { id: string }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<LedgerError | null>(null);
  const fetchCsv = async () => {
    setBusy(true);
    setError(null);
    try {
      const text = await api((ledger) => ledger.transfers.report(id, { format: 'csv' }));
      download(`${id}-report.csv`, typeof text === 'string' ? text : JSON.stringify(text));
    } catch (failure) {
      setError(asLedgerError(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" onClick={() => void fetchCsv()} disabled={busy}>
        {busy ? 'Preparing CSV…' : 'Download report (CSV)'}
      </button>
      {error && <ErrorBox error={error} />}
    </>
  );
}

function TransferDetail({ id }: { id: string }) {
  const [report, retry] = useLoad(() => api((ledger) => ledger.transfers.report(id, { limit: 1 })) as Promise<Report>, [id]);
  // The members as the report lists them (cash_in members carry no `transfer` until it settles), a page at a time.
  const members = usePaged<Transaction>(
    (cursor) =>
      (api((ledger) => ledger.transfers.report(id, { limit: 25, ...(cursor ? { cursor } : {}) })) as Promise<Report>).then(
        (answer) => answer.transactions,
      ),
    [id],
  );
  return (
    <>
      <DetailHeading list="transfers" listTitle="Transfers" title="Transfer" id={id} />
      <Show state={report} what="the transfer" retry={retry}>
        {({ transfer, totals }) => (
          <>
            <Fields
              rows={[
                ['Amount', <Money cents={transfer.amount} />],
                ['Direction', transfer.direction],
                ['Status', <Badge value={transfer.status} />],
                ['Window', transfer.window_date],
                ['Settlement date', transfer.date],
                ['Members', String(transfer.transaction_count)],
                ['Created', <Time iso={transfer.created_at} />],
                ['Settled', <Time iso={transfer.settled_at} />],
              ]}
            />
            <section aria-labelledby="report-title">
              <h2 id="report-title">Report</h2>
              <TotalsTable totals={totals} />
              <CsvButton id={id} />
            </section>
            <AchEntrySection kind="transfer" id={id} />
          </>
        )}
      </Show>
      {report.status === 'ok' && (
        <section aria-labelledby="members-title">
          <h2 id="members-title">Members</h2>
          <PagedTable
            list={members}
            caption="Members"
            head={TRANSACTION_HEAD}
            row={(t) => <TransactionRow t={t} key={t.id} />}
            empty="No members."
          />
        </section>
      )}
    </>
  );
}

export function TransfersPage({ id, query }: { id: string | undefined; query: URLSearchParams }) {
  return id ? <TransferDetail id={id} /> : <TransferList query={query} />;
}
