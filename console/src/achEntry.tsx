import { api, LedgerError, useLoad, type Schemas } from './api';
import { Badge, Empty, Fields, Id, Money, Show, Time } from './ui';

type AchEntry = Schemas['AchEntry'];

/**
 * A payment's ACH entry (SPEC §24). Most payments have none (no bank account, a zero transfer), so the API's 404
 * is an answer here, not a failure: it reads "No ACH entry" and every other error shows as an error.
 */
async function entryOf(kind: 'transaction' | 'transfer', id: string): Promise<AchEntry | null> {
  try {
    return await api((ledger) => (kind === 'transaction' ? ledger.transactions.achEntry(id) : ledger.transfers.achEntry(id)));
  } catch (error) {
    if (error instanceof LedgerError && error.status === 404) return null;
    throw error;
  }
}

export function AchEntrySection({ kind, id }: { kind: 'transaction' | 'transfer'; id: string }) {
  const [state, retry] = useLoad(() => entryOf(kind, id), [kind, id]);
  return (
    <section aria-labelledby="ach-title">
      <h2 id="ach-title">ACH entry</h2>
      <Show state={state} what="the ACH entry" retry={retry}>
        {(entry) =>
          entry === null ? (
            <Empty>No ACH entry.</Empty>
          ) : (
            <Fields
              rows={[
                ['Trace number', <Id value={entry.trace_number} />],
                ['SEC code', entry.sec_code],
                ['Transaction code', String(entry.transaction_code)],
                ['Amount', <Money cents={entry.amount} />],
                ['Effective date', entry.effective_date],
                ['File', <Id value={entry.file_id} />],
                ['Status', <Badge value={entry.status} />],
                ['Return', entry.return ? `${entry.return.code}: ${entry.return.reason}` : null],
                ['Created', <Time iso={entry.created_at} />],
              ]}
            />
          )
        }
      </Show>
    </section>
  );
}
