import type { ComponentChildren } from 'preact';
import { api, useLoad, usePaged, type Schemas } from '../api';
import { formText, href, pageOf } from '../route';
import { label } from '../format';
import { Badge, Id, Money, PagedTable, Show, Table, Time } from '../ui';

type Rates = Schemas['AchReturnRates'];
type ReturnRecord = Schemas['AchReturnRecord'];
type AchException = Schemas['AchException'];

/** The NACHA Rules' kinds of return (SPEC §25), in the order the Rules give their thresholds. */
const KINDS = [
  ['unauthorized', 'Unauthorized', 'R05, R07, R10, R11, R29, R51'],
  ['administrative', 'Administrative', 'R02, R03, R04'],
  ['overall', 'Overall', 'every return code'],
] as const;

const TYPES = ['return', 'notification_of_change'] as const;
const EXCEPTION_KINDS = ['unparseable_file', 'unknown_trace', 'foreign_odfi', 'transfer_returned', 'not_applicable'] as const;

/** A rate as a percentage for reading (a ratio, not money: two decimals are plenty beside 0.5 %, 3 % and 15 %). */
function percent(rate: number): string {
  return `${(rate * 100).toFixed(2)} %`;
}

function RatesSection({ rates }: { rates: Rates }) {
  return (
    <>
      <p>
        Debit entries of the last {rates.window_days} days: <strong>{rates.debits}</strong>. A rate above its threshold is where the bank
        must act on the originator.
      </p>
      <Table caption="Return rates by kind" head={['Kind', 'Codes', 'Returned', 'Rate', 'Threshold', 'Against threshold', 'State']}>
        {KINDS.map(([kind, title, codes]) => {
          const rate = rates[kind];
          const over = rate.rate > rate.threshold;
          return (
            <tr key={kind}>
              <th scope="row">{title}</th>
              <td class="small">{codes}</td>
              <td class="num">{rate.count}</td>
              <td class="num">{percent(rate.rate)}</td>
              <td class="num">{percent(rate.threshold)}</td>
              <td>
                <meter
                  min={0}
                  max={rate.threshold * 2}
                  low={rate.threshold * 0.5}
                  high={rate.threshold}
                  optimum={0}
                  value={Math.min(rate.rate, rate.threshold * 2)}
                  aria-label={`${title} rate ${percent(rate.rate)} of a ${percent(rate.threshold)} threshold`}
                >
                  {percent(rate.rate)}
                </meter>
              </td>
              <td>
                <Badge value={over ? 'over_threshold' : 'within_threshold'} />
              </td>
            </tr>
          );
        })}
      </Table>
    </>
  );
}

/** The transaction or transfer an entry moved, as a link to its page. */
function Payment({ transactionId, transferId }: { transactionId: string | null; transferId: string | null }) {
  const id = transactionId ?? transferId;
  if (!id) return <span class="muted">matched no entry</span>;
  return <Id value={id} href={pageOf(id)} />;
}

/** `applied` in words, each with the id it acted on. */
function Applied({ item }: { item: ReturnRecord }) {
  if (item.applied.length === 0) return <span class="muted">counted in the rates only</span>;
  const what: Record<ReturnRecord['applied'][number], ComponentChildren> = {
    dispute_lost: (
      <>
        Dispute lost:{' '}
        <Id value={item.dispute_transaction_id} href={item.dispute_transaction_id ? pageOf(item.dispute_transaction_id) : undefined} />
      </>
    ),
    bank_account_disabled: (
      <>
        Bank account disabled: <Id value={item.bank_account_id} />
      </>
    ),
    user_suspended: (
      <>
        User suspended: <Id value={item.user_id} href={item.user_id ? pageOf(item.user_id) : undefined} />
      </>
    ),
    bank_account_corrected: (
      <>
        Bank account corrected: <Id value={item.bank_account_id} />
      </>
    ),
    exception: (
      <>
        Exception for an operator: <Id value={item.exception_id} />
      </>
    ),
  };
  return (
    <ul class="applied">
      {item.applied.map((effect) => (
        <li key={effect}>{what[effect]}</li>
      ))}
    </ul>
  );
}

const RETURN_HEAD = ['Applied at', 'Code', 'Reason', 'Type', 'Payment', 'Amount', 'Trace number', 'What was applied'];

function ReturnRow({ item }: { item: ReturnRecord }) {
  return (
    <tr key={item.id}>
      <td>
        <Time iso={item.created_at} />
      </td>
      <td>
        <strong>{item.code}</strong>
      </td>
      <td class="reason">{item.reason}</td>
      <td>{item.type === 'return' ? 'return' : 'NOC'}</td>
      <td>
        <Payment transactionId={item.entry.transaction_id} transferId={item.entry.transfer_id} />
      </td>
      <td class="num">
        <Money cents={item.entry.amount} />
      </td>
      <td>
        <Id value={item.entry.trace_number} />
      </td>
      <td>
        <Applied item={item} />
      </td>
    </tr>
  );
}

const EXCEPTION_HEAD = ['Received', 'Kind', 'Code', 'Trace number', 'Payment', 'File', 'Detail'];

function ExceptionRow({ item }: { item: AchException }) {
  return (
    <tr key={item.id}>
      <td>
        <Time iso={item.created_at} />
      </td>
      <td>
        <Badge value={item.kind} />
      </td>
      <td>{item.code ? <abbr title={item.reason ?? undefined}>{item.code}</abbr> : <span class="muted">—</span>}</td>
      <td>
        <Id value={item.trace_number} />
      </td>
      <td>
        <Payment transactionId={item.transaction_id} transferId={item.transfer_id} />
      </td>
      <td class="small break">
        {item.inbound_file.file_name}
        {item.inbound_file.line > 0 ? `, line ${item.inbound_file.line}` : ''}
        {item.inbound_file.status === 'rejected' ? ' (rejected)' : ''}
      </td>
      <td class="detail">
        {item.detail}
        {item.kind === 'transfer_returned' ? <OperatorAction action={item.operator_action} /> : null}
      </td>
    </tr>
  );
}

/** SPEC §25: a returned transfer's entry waits for the operator; what the operator did, or that it still waits. */
function OperatorAction({ action }: { action: AchException['operator_action'] }) {
  if (!action)
    return (
      <div class="small">
        <Badge value="awaiting_operator" />
      </div>
    );
  return (
    <div class="small">
      {action.action === 'presented_again' ? (
        <>
          Presented again as <Id value={action.entry_id} />
        </>
      ) : (
        <>Settled outside ACH, reference {action.reference}</>
      )}{' '}
      on <Time iso={action.at} />
    </div>
  );
}

/** A filter form of one list on a page of several: the other lists' filters stay as they are. */
function submitKeeping(path: string, query: URLSearchParams, names: readonly string[]): (event: SubmitEvent) => void {
  return (event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const next = Object.fromEntries(query.entries());
    for (const name of names) next[name] = formText(form, name);
    location.hash = href(path, next);
  };
}

function Choice({
  id,
  name,
  title,
  value,
  choices,
}: {
  id: string;
  name: string;
  title: string;
  value: string;
  choices: readonly string[];
}) {
  return (
    <div class="field">
      <label for={id}>{title}</label>
      <select id={id} name={name}>
        <option value="">any</option>
        {choices.map((choice) => (
          <option key={choice} value={choice} selected={value === choice}>
            {label(choice)}
          </option>
        ))}
      </select>
    </div>
  );
}

function ReturnsList({ query }: { query: URLSearchParams }) {
  const type = query.get('type') ?? '';
  const list = usePaged<ReturnRecord>(
    (cursor) =>
      api((ledger) =>
        ledger.ach.returns({ limit: 25, ...(type ? { type: type as ReturnRecord['type'] } : {}), ...(cursor ? { cursor } : {}) }),
      ),
    [type],
  );
  return (
    <section aria-labelledby="returns-title">
      <h2 id="returns-title">Returns and notifications of change</h2>
      <form class="filters" onSubmit={submitKeeping('returns', query, ['type'])} aria-label="Filter returns" key={query.toString()}>
        <Choice id="r-type" name="type" title="type" value={type} choices={TYPES} />
        <div class="actions">
          <button type="submit">Search</button>
        </div>
      </form>
      <PagedTable
        list={list}
        caption="Returns list"
        head={RETURN_HEAD}
        empty="No returns or notifications of change: the bank has sent none about your entries."
        row={(item) => <ReturnRow item={item} />}
      />
    </section>
  );
}

function ExceptionsList({ query }: { query: URLSearchParams }) {
  const kind = query.get('kind') ?? '';
  const list = usePaged<AchException>(
    (cursor) =>
      api((ledger) =>
        ledger.ach.exceptions({ limit: 25, ...(kind ? { kind: kind as AchException['kind'] } : {}), ...(cursor ? { cursor } : {}) }),
      ),
    [kind],
  );
  return (
    <section aria-labelledby="exceptions-title">
      <h2 id="exceptions-title">Exceptions</h2>
      <p class="small muted">
        What the bank sent that was kept but not applied, never dropped: yours, and items that matched no organization&apos;s entry.
      </p>
      <form class="filters" onSubmit={submitKeeping('returns', query, ['kind'])} aria-label="Filter exceptions" key={query.toString()}>
        <Choice id="x-kind" name="kind" title="kind" value={kind} choices={EXCEPTION_KINDS} />
        <div class="actions">
          <button type="submit">Search</button>
        </div>
      </form>
      <PagedTable
        list={list}
        caption="Exceptions list"
        head={EXCEPTION_HEAD}
        empty="No exceptions: everything the bank sent was applied."
        row={(item) => <ExceptionRow item={item} />}
      />
    </section>
  );
}

/** SPEC §25: the organization's ACH return rates against the NACHA thresholds, its returns and NOCs, and the exceptions. */
export function ReturnsPage({ query }: { query: URLSearchParams }) {
  const [rates, retry] = useLoad(() => api((ledger) => ledger.ach.returnRates()), []);
  return (
    <>
      <h1>ACH returns</h1>
      <section aria-labelledby="rates-title">
        <h2 id="rates-title">Return rates</h2>
        <Show state={rates} what="the return rates" retry={retry}>
          {(loaded) => <RatesSection rates={loaded} />}
        </Show>
      </section>
      <ReturnsList query={query} />
      <ExceptionsList query={query} />
    </>
  );
}
