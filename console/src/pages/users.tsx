import type { ComponentChildren } from 'preact';
import { api, useLoad, usePaged, type Schemas } from '../api';
import { href, submitFilters } from '../route';
import { label } from '../format';
import { Badge, DetailHeading, Fields, Id, Json, Money, PagedTable, Show, Table, Time } from '../ui';

type User = Schemas['User'];
type Limits = Schemas['Limits'];

const DIRECTIONS = ['cash_in', 'cash_out'] as const;
const PERIODS = ['day', 'week', 'month'] as const;

/** SPEC §26: each limit in force beside what its current Eastern period used, then the raises still cooling off. */
function LimitsSection({ limits }: { limits: Limits }) {
  return (
    <>
      <Table caption="Limits and use of each period" head={['Direction', 'Period', 'Limit', 'Used', 'Left']}>
        {DIRECTIONS.flatMap((direction) =>
          PERIODS.map((period) => {
            const limit = limits[direction][period];
            const used = limits.used[direction][period];
            return (
              <tr key={`${direction}-${period}`}>
                <td>{label(direction)}</td>
                <td>{period}</td>
                <td class="num">{limit === null ? <span class="muted">none</span> : <Money cents={limit} />}</td>
                <td class="num">
                  <Money cents={used} />
                </td>
                <td class="num">{limit === null ? <span class="muted">—</span> : <Money cents={Math.max(0, limit - used)} />}</td>
              </tr>
            );
          }),
        )}
      </Table>
      <h3>Pending raises</h3>
      {limits.pending.length === 0 ? (
        <p class="muted">No raise is waiting out its cooling-off.</p>
      ) : (
        <Table caption="Pending raises" head={['Direction', 'Period', 'New limit', 'Takes effect']}>
          {limits.pending.map((raise) => (
            <tr key={`${raise.direction}-${raise.period}`}>
              <td>{label(raise.direction)}</td>
              <td>{raise.period}</td>
              <td class="num">{raise.amount === null ? 'none' : <Money cents={raise.amount} />}</td>
              <td>
                <Time iso={raise.effective_at} />
              </td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}

function UserList({ query }: { query: URLSearchParams }) {
  const status = query.get('status') ?? '';
  const key = query.get('key') ?? '';
  const value = query.get('value') ?? '';
  const list = usePaged<User>(
    (cursor) =>
      api((ledger) =>
        ledger.users.list({
          limit: 25,
          ...(status ? { status: status as User['status'] } : {}),
          ...(key ? { metadata: { [key]: value } } : {}),
          ...(cursor ? { cursor } : {}),
        }),
      ),
    [status, key, value],
  );
  const submit = submitFilters('users', ['status', 'key', 'value']);
  return (
    <>
      <h1>Users</h1>
      <form class="filters" onSubmit={submit} aria-label="Filter users" key={query.toString()}>
        <div class="field">
          <label for="u-status">status</label>
          <select id="u-status" name="status">
            <option value="">any</option>
            {['created', 'enabled', 'suspended', 'disabled'].map((choice) => (
              <option key={choice} value={choice} selected={status === choice}>
                {choice}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="u-key">metadata key</label>
          <input id="u-key" name="key" defaultValue={key} spellcheck={false} />
        </div>
        <div class="field">
          <label for="u-value">metadata value</label>
          <input id="u-value" name="value" defaultValue={value} spellcheck={false} />
        </div>
        <div class="actions">
          <button type="submit">Search</button>
        </div>
      </form>
      <PagedTable
        list={list}
        caption="Users"
        head={['Id', 'Status', 'Tag', 'Verified', 'Created']}
        empty="No users match."
        row={(user) => (
          <tr key={user.id}>
            <td>
              <Id value={user.id} href={`#/users/${user.id}`} />
            </td>
            <td>
              <Badge value={user.status} />
            </td>
            <td>{user.tag ?? <span class="muted">—</span>}</td>
            <td>{user.identity_verified ? 'yes' : 'no'}</td>
            <td>
              <Time iso={user.created_at} />
            </td>
          </tr>
        )}
      />
    </>
  );
}

function UserDetail({ id }: { id: string }) {
  const [state, retry] = useLoad(() => api((ledger) => ledger.users.retrieve(id)), [id]);
  const [limits, retryLimits] = useLoad(() => api((ledger) => ledger.limits.retrieve(id)), [id]);
  return (
    <>
      <DetailHeading list="users" listTitle="Users" title="User" id={id} />
      <Show state={state} what="the user" retry={retry}>
        {(user) => (
          <>
            <Fields
              rows={[
                ['Tag', user.tag],
                ['Status', <Badge value={user.status} />],
                ...(user.self_excluded_until === null
                  ? []
                  : ([
                      [
                        'Self-excluded until',
                        user.self_excluded_until === 'indefinite' ? 'indefinitely' : <Time iso={user.self_excluded_until} />,
                      ],
                    ] as [string, ComponentChildren][])),
                ['Identity verified', user.identity_verified ? 'yes' : 'no'],
                ['Created', <Time iso={user.created_at} />],
                ['Transactions', <a href={href('transactions', { user_id: user.id })}>This user's transactions</a>],
                ['Events', <a href={href('events', { object_id: user.id })}>Events about this user</a>],
              ]}
            />
            <h2>Limits</h2>
            <Show state={limits} what="the user's limits" retry={retryLimits}>
              {(loaded) => <LimitsSection limits={loaded} />}
            </Show>
            <h2>Metadata</h2>
            <Json value={user.metadata} />
          </>
        )}
      </Show>
    </>
  );
}

export function UsersPage({ id, query }: { id: string | undefined; query: URLSearchParams }) {
  return id ? <UserDetail id={id} /> : <UserList query={query} />;
}
