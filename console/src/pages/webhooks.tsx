import { useEffect, useState } from 'preact/hooks';
import { api, asLedgerError, idempotencyKey, useLoad, usePaged, type LedgerError, type Schemas } from '../api';
import { formText } from '../route';
import { Badge, DetailHeading, Empty, ErrorBox, Fields, Id, PagedTable, Show, Time } from '../ui';

type Endpoint = Schemas['WebhookEndpoint'];
type Delivery = Schemas['WebhookDeliveryAttempt'];
type Replay = Schemas['WebhookReplay'];

const REPLAY_POLL_MS = 1_000;

/** Sends one event again to one endpoint (POST /webhook/{id}/resend); the other of the two is chosen here. */
export function ResendForm({ eventId, endpointId, onSent }: { eventId?: string; endpointId?: string; onSent?: () => void }) {
  const [endpoints] = useLoad(
    () => (endpointId ? Promise.resolve({ data: [] as Endpoint[] }) : api((ledger) => ledger.webhooks.list({ limit: 100 }))),
    [endpointId],
  );
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<LedgerError | null>(null);
  const [sent, setSent] = useState<Delivery | null>(null);
  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const endpoint = endpointId ?? formText(form, 'endpoint');
    const evt = eventId ?? formText(form, 'event');
    setBusy(true);
    setError(null);
    setSent(null);
    try {
      const delivery = await api((ledger) => ledger.webhooks.resend(endpoint, { event_id: evt }, { idempotencyKey: idempotencyKey() }));
      setSent(delivery);
      onSent?.();
    } catch (failure) {
      setError(asLedgerError(failure));
    } finally {
      setBusy(false);
    }
  };
  if (!endpointId && endpoints.status === 'ok' && endpoints.data.data.length === 0)
    return <Empty>No webhook endpoints to resend to.</Empty>;
  return (
    <form class="inline-form" onSubmit={(event) => void submit(event)} aria-label="Resend an event">
      {!endpointId && (
        <div class="field">
          <label for="r-endpoint">Endpoint</label>
          <select id="r-endpoint" name="endpoint" required>
            {endpoints.status === 'ok' &&
              endpoints.data.data.map((endpoint) => (
                <option key={endpoint.id} value={endpoint.id}>
                  {endpoint.url}
                </option>
              ))}
          </select>
        </div>
      )}
      {!eventId && (
        <div class="field">
          <label for="r-event">Event id</label>
          <input id="r-event" name="event" required placeholder="evt_…" spellcheck={false} />
        </div>
      )}
      <div class="actions">
        <button type="submit" disabled={busy}>
          {busy ? 'Resending…' : 'Resend'}
        </button>
      </div>
      {sent && (
        <p class="success" role="status">
          Resent: delivery <code class="id">{sent.id}</code>, attempt {sent.attempt}, {sent.outcome}.
        </p>
      )}
      {error && <ErrorBox error={error} />}
    </form>
  );
}

function ReplayProgress({ endpointId, replay, onDone }: { endpointId: string; replay: Replay; onDone: () => void }) {
  const [current, setCurrent] = useState(replay);
  const [error, setError] = useState<LedgerError | null>(null);
  useEffect(() => {
    if (current.status !== 'running') {
      onDone();
      return;
    }
    const timer = setTimeout(() => {
      api((ledger) => ledger.webhooks.retrieveReplay(endpointId, current.id)).then(setCurrent, (failure: unknown) =>
        setError(asLedgerError(failure)),
      );
    }, REPLAY_POLL_MS);
    return () => clearTimeout(timer);
  }, [current, endpointId]);
  return (
    <div class="replay" aria-live="polite">
      <p>
        Replay <code class="id">{current.id}</code> <Badge value={current.status} />
      </p>
      <label for={`progress-${current.id}`}>
        {current.events_sent} of {current.events_total} events sent ({current.events_failed} not answered with 2xx)
      </label>
      <progress id={`progress-${current.id}`} max={Math.max(1, current.events_total)} value={current.events_sent} />
      {current.failure_reason && <p>{current.failure_reason}</p>}
      {error && <ErrorBox error={error} />}
    </div>
  );
}

function ReplayForm({ endpointId, onDone }: { endpointId: string; onDone: () => void }) {
  const [replay, setReplay] = useState<Replay | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<LedgerError | null>(null);
  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const from = formText(form, 'from');
    const to = formText(form, 'to');
    setBusy(true);
    setError(null);
    try {
      const body = {
        created_at_gte: new Date(from).toISOString(),
        ...(to ? { created_at_lt: new Date(to).toISOString() } : {}),
        failed_only: form.get('failed_only') === 'on',
      };
      setReplay(await api((ledger) => ledger.webhooks.replay(endpointId, body, { idempotencyKey: idempotencyKey() })));
    } catch (failure) {
      setError(asLedgerError(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <form class="inline-form" onSubmit={(event) => void submit(event)} aria-label="Start a replay">
        <div class="field">
          <label for="p-from">From (your time)</label>
          <input id="p-from" name="from" type="datetime-local" step="1" required />
        </div>
        <div class="field">
          <label for="p-to">Until (optional)</label>
          <input id="p-to" name="to" type="datetime-local" step="1" />
        </div>
        <div class="field check">
          <input id="p-failed" name="failed_only" type="checkbox" />
          <label for="p-failed">Only events never delivered</label>
        </div>
        <div class="actions">
          <button type="submit" disabled={busy}>
            {busy ? 'Starting…' : 'Start replay'}
          </button>
        </div>
      </form>
      {error && <ErrorBox error={error} />}
      {replay && <ReplayProgress endpointId={endpointId} replay={replay} onDone={onDone} key={replay.id} />}
    </>
  );
}

function EndpointDetail({ id }: { id: string }) {
  const [state, retry] = useLoad(() => api((ledger) => ledger.webhooks.retrieve(id)), [id]);
  // A resend or a finished replay adds deliveries: the list starts again from its newest page.
  const [round, setRound] = useState(0);
  const refresh = () => setRound((n) => n + 1);
  const deliveries = usePaged<Delivery>(
    (cursor) => api((ledger) => ledger.webhooks.deliveries(id, { limit: 25, ...(cursor ? { cursor } : {}) })),
    [id, round],
  );
  return (
    <>
      <DetailHeading list="webhooks" listTitle="Webhooks" title="Endpoint" id={id} />
      <Show state={state} what="the endpoint" retry={retry}>
        {(endpoint) => (
          <>
            <Fields
              rows={[
                ['URL', <span class="break">{endpoint.url}</span>],
                ['Status', <Badge value={endpoint.status} />],
                ['Events', endpoint.events.join(', ')],
                ['Disabled because', endpoint.disabled_reason],
                ['Created', <Time iso={endpoint.created_at} />],
              ]}
            />
            <section aria-labelledby="resend-title">
              <h2 id="resend-title">Resend an event</h2>
              <ResendForm endpointId={id} onSent={refresh} />
            </section>
            <section aria-labelledby="replay-title">
              <h2 id="replay-title">Replay a range of events</h2>
              <ReplayForm endpointId={id} onDone={refresh} />
            </section>
            <section aria-labelledby="deliveries-title">
              <h2 id="deliveries-title">Deliveries</h2>
              <PagedTable
                list={deliveries}
                caption="Deliveries"
                head={['Event', 'Type', 'Attempt', 'Outcome', 'Answer', 'When']}
                empty="Nothing delivered yet."
                row={(delivery) => (
                  <tr key={delivery.id}>
                    <td>
                      <Id value={delivery.event_id} href={`#/events/${delivery.event_id}`} />
                    </td>
                    <td>{delivery.event_type}</td>
                    <td class="num">{delivery.attempt}</td>
                    <td>
                      <Badge value={delivery.outcome} />
                    </td>
                    <td>{delivery.response_status_code ?? delivery.error ?? '—'}</td>
                    <td>
                      <Time iso={delivery.created_at} />
                    </td>
                  </tr>
                )}
              />
            </section>
          </>
        )}
      </Show>
    </>
  );
}

function EndpointList() {
  const list = usePaged<Endpoint>((cursor) => api((ledger) => ledger.webhooks.list({ limit: 25, ...(cursor ? { cursor } : {}) })), []);
  return (
    <>
      <h1>Webhooks</h1>
      <PagedTable
        list={list}
        caption="Endpoints"
        head={['Id', 'URL', 'Status', 'Events', 'Created']}
        empty="No webhook endpoints. Create them with POST /webhook."
        row={(endpoint) => (
          <tr key={endpoint.id}>
            <td>
              <Id value={endpoint.id} href={`#/webhooks/${endpoint.id}`} />
            </td>
            <td class="break">{endpoint.url}</td>
            <td>
              <Badge value={endpoint.status} />
            </td>
            <td>{endpoint.events.join(', ')}</td>
            <td>
              <Time iso={endpoint.created_at} />
            </td>
          </tr>
        )}
      />
    </>
  );
}

export function WebhooksPage({ id }: { id: string | undefined }) {
  return id ? <EndpointDetail id={id} /> : <EndpointList />;
}
