import { api, useLoad, usePaged, type Schemas } from '../api';
import { href, pageOf, submitFilters } from '../route';
import { DetailHeading, Fields, Id, Json, PagedTable, Show, Time } from '../ui';
import { ResendForm } from './webhooks';

type Event = Schemas['WebhookEvent'];

const optionalHref = (target: string | undefined) => (target ? { href: target } : {});

/** The resource an event is about: its data's id, or the user whose limits changed (that data has no id). */
const aboutOf = (event: Schemas['WebhookEvent']): string => ('id' in event.data ? event.data.id : event.data.user_id);

export const EVENT_TYPES = [
  'user.created',
  'user.status_changed',
  'user.updated',
  'intent.approved',
  'intent.declined',
  'intent.updated',
  'transaction.created',
  'transaction.status_changed',
  'transfer.created',
  'transfer.settled',
  'refund.created',
  'dispute.created',
  'dispute.resolved',
];

function EventList({ query }: { query: URLSearchParams }) {
  const type = query.get('type') ?? '';
  const objectId = query.get('object_id') ?? '';
  const list = usePaged<Event>(
    (cursor) =>
      api((ledger) =>
        ledger.events.list({
          limit: 25,
          ...(type ? { type } : {}),
          ...(objectId ? { object_id: objectId } : {}),
          ...(cursor ? { cursor } : {}),
        }),
      ),
    [type, objectId],
  );
  const submit = submitFilters('events', ['type', 'object_id']);
  return (
    <>
      <h1>Events</h1>
      <form class="filters" onSubmit={submit} aria-label="Filter events" key={query.toString()}>
        <div class="field">
          <label for="e-type">type</label>
          <select id="e-type" name="type">
            <option value="">any</option>
            {EVENT_TYPES.map((choice) => (
              <option key={choice} value={choice} selected={type === choice}>
                {choice}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="e-object">object id</label>
          <input id="e-object" name="object_id" defaultValue={objectId} spellcheck={false} />
        </div>
        <div class="actions">
          <button type="submit">Search</button>
        </div>
      </form>
      <PagedTable
        list={list}
        caption="Events"
        head={['Id', 'Type', 'About', 'Created']}
        empty="No events match within the retention period."
        row={(event) => (
          <tr key={event.id}>
            <td>
              <Id value={event.id} href={`#/events/${event.id}`} />
            </td>
            <td>{event.type}</td>
            <td>
              <Id value={aboutOf(event)} {...optionalHref(pageOf(aboutOf(event)))} />
            </td>
            <td>
              <Time iso={event.created_at} />
            </td>
          </tr>
        )}
      />
    </>
  );
}

function EventDetail({ id }: { id: string }) {
  const [state, retry] = useLoad(() => api((ledger) => ledger.events.retrieve(id)), [id]);
  return (
    <>
      <DetailHeading list="events" listTitle="Events" title="Event" id={id} />
      <Show state={state} what="the event" retry={retry}>
        {(event) => (
          <>
            <Fields
              rows={[
                ['Type', event.type],
                ['Created', <Time iso={event.created_at} />],
                ['About', <a href={href('events', { object_id: aboutOf(event) })}>{aboutOf(event)}</a>],
              ]}
            />
            <section aria-labelledby="resend-title">
              <h2 id="resend-title">Resend to an endpoint</h2>
              <ResendForm eventId={event.id} />
            </section>
            <h2>Data</h2>
            <Json value={event.data} />
          </>
        )}
      </Show>
    </>
  );
}

export function EventsPage({ id, query }: { id: string | undefined; query: URLSearchParams }) {
  return id ? <EventDetail id={id} /> : <EventList query={query} />;
}
