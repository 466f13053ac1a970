import { useState } from 'preact/hooks';
import { api, useLoad, type ConsoleSettings, type Schemas } from '../api';
import { Chart, type DayFlow } from '../chart';
import { addDays, formatTime, label } from '../format';
import { href } from '../route';
import { Badge, Empty, Fields, Money, Show, Table, useSettings } from '../ui';

type Account = Schemas['Account'];

/** The open window is read a page of 100 at a time, at most this many pages: the overview never loads everything. */
const WINDOW_PAGES_MAX = 10;
const CHART_DAYS = 30;
const CHART_CONCURRENCY = 4;

interface WindowSoFar {
  rows: { direction: string; status: string; count: number; amount: number }[];
  counted: number;
  complete: boolean;
}

async function windowSoFar(accountId: string, date: string): Promise<WindowSoFar> {
  const groups = new Map<string, { direction: string; status: string; count: number; amount: number }>();
  let cursor: string | undefined;
  let counted = 0;
  for (let page = 0; page < WINDOW_PAGES_MAX; page += 1) {
    const answer = await api((ledger) =>
      ledger.transactions.list({ account_id: accountId, date, limit: 100, ...(cursor ? { cursor } : {}) }),
    );
    for (const t of answer.data) {
      const key = `${t.direction} ${t.status}`;
      const group = groups.get(key) ?? { direction: t.direction, status: t.status, count: 0, amount: 0 };
      group.count += 1;
      group.amount += t.amount;
      groups.set(key, group);
      counted += 1;
    }
    if (!answer.has_more || answer.next_cursor === null) return { rows: [...groups.values()], counted, complete: true };
    cursor = answer.next_cursor;
  }
  return { rows: [...groups.values()], counted, complete: false };
}

/** One statement per Eastern day (its cash_in and cash_out recorded), a few at a time. */
async function lastDays(accountId: string, today: string): Promise<DayFlow[]> {
  const days = Array.from({ length: CHART_DAYS }, (_, i) => addDays(today, i - CHART_DAYS + 1));
  const flows: DayFlow[] = new Array<DayFlow>(days.length);
  let next = 0;
  const worker = async () => {
    while (next < days.length) {
      const index = next++;
      const day = days[index]!;
      const statement = (await api((ledger) => ledger.accounts.statement(accountId, { from: day, to: day }))) as Schemas['Statement'];
      const cashIn = statement.totals.cash_in_recorded.amount;
      const cashOut = statement.totals.cash_out_recorded.amount;
      flows[index] = { day, cashIn, cashOut, net: cashIn - cashOut };
    }
  };
  await Promise.all(Array.from({ length: CHART_CONCURRENCY }, worker));
  return flows;
}

function Balances({ accounts }: { accounts: Account[] }) {
  return (
    <Table caption="Balances now" head={['Account', 'Pending', 'Available', 'In transfer']}>
      {accounts.map((account) => (
        <tr key={account.id}>
          <th scope="row">
            {account.name}
            <br />
            <code class="id small">{account.id}</code>
          </th>
          <td class="num">
            <Money cents={account.balances.pending} />
          </td>
          <td class="num">
            <Money cents={account.balances.available} />
          </td>
          <td class="num">
            <Money cents={account.balances.in_transfer} />
          </td>
        </tr>
      ))}
    </Table>
  );
}

function OpenWindow({ accountId, settings }: { accountId: string; settings: ConsoleSettings }) {
  const window = settings.open_window;
  const [state, retry] = useLoad(() => windowSoFar(accountId, window.date), [accountId, window.date]);
  return (
    <section aria-labelledby="window-title">
      <h2 id="window-title">Open window {window.date}</h2>
      <Fields
        rows={[
          [
            'Closes',
            <span>
              <time dateTime={window.closes_at}>{formatTime(window.closes_at)}</time>{' '}
              <span class="window">({settings.settlement_cutoff} Eastern)</span>
            </span>,
          ],
          ['Its transfer date', window.transfer_date],
          ['Cutoff (Eastern)', settings.settlement_cutoff],
        ]}
      />
      <Show state={state} what="the open window" retry={retry}>
        {(so) =>
          so.rows.length === 0 ? (
            <Empty>No transactions in this window yet.</Empty>
          ) : (
            <>
              <Table caption="Open window so far by status" head={['Direction', 'Status', 'Count', 'Amount']}>
                {so.rows.map((row) => (
                  <tr key={`${row.direction}-${row.status}`}>
                    <td>{label(row.direction)}</td>
                    <td>
                      <Badge value={row.status} />
                    </td>
                    <td class="num">{row.count}</td>
                    <td class="num">
                      <Money cents={row.amount} />
                    </td>
                  </tr>
                ))}
              </Table>
              <p class="small">
                {so.complete ? `All ${so.counted} transactions of the window.` : `The first ${so.counted} transactions of the window.`}{' '}
                <a href={href('transactions', { date: window.date, account_id: accountId })}>List them</a>
              </p>
            </>
          )
        }
      </Show>
    </section>
  );
}

function LastDays({ accountId, today }: { accountId: string; today: string }) {
  const [state, retry] = useLoad(() => lastDays(accountId, today), [accountId, today]);
  return (
    <section aria-labelledby="chart-title">
      <h2 id="chart-title">Last {CHART_DAYS} Eastern days</h2>
      <Show state={state} what="the last 30 days" retry={retry}>
        {(flows) => <Chart flows={flows} />}
      </Show>
    </section>
  );
}

export function OverviewPage() {
  const settings = useSettings();
  const [accounts, retry] = useLoad(() => api((ledger) => ledger.accounts.list({ limit: 100 })), []);
  const [chosen, setChosen] = useState<string | null>(null);
  return (
    <>
      <h1>Overview</h1>
      <Show state={accounts} what="balances" retry={retry}>
        {(page) => {
          const list = page.data;
          const accountId = chosen ?? list[0]?.id ?? null;
          return (
            <>
              <section aria-labelledby="balances-title" data-ready="overview">
                <h2 id="balances-title">Balances now</h2>
                <Balances accounts={list} />
              </section>
              {list.length > 1 && (
                <p>
                  <label for="account">Account for the window and the chart</label>{' '}
                  <select id="account" value={accountId ?? ''} onChange={(event) => setChosen(event.currentTarget.value)}>
                    {list.map((account) => (
                      <option key={account.id} value={account.id}>
                        {account.name}
                      </option>
                    ))}
                  </select>
                </p>
              )}
              {accountId && settings && <OpenWindow accountId={accountId} settings={settings} />}
              {accountId && settings && <LastDays accountId={accountId} today={settings.open_window.date} />}
            </>
          );
        }}
      </Show>
    </>
  );
}
