import { withTransaction, createPool, type Pool } from '../src/db/pool';
import { migrate } from '../src/db/migrate';
import { randomString } from '../src/ids';
import { TRANSITIONS } from '../src/ledger/workflowContract';
import { applyTransition, insertTransaction, type TransactionRow } from '../src/ledger/transactions';
import { createAccount, createOrganization } from '../src/orgs/repo';
import { createWindowTransfer, settleTransfer } from '../src/settlement/repo';
import { journalViolations } from '../src/journal/invariants';
import { takeSnapshots } from '../src/journal/repo';
import { apiClient, createTestDatabase, createTestOrg, startStack, type Stack, type TestOrg } from './support/harness';
import { admin } from './support/payments';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ worker: false });
});
afterAll(async () => {
  await stack.stop();
});

const DAY = '2025-01-10';
const at = (time: string) => new Date(`${DAY}T${time}Z`);

async function record(
  pool: Pool,
  org: { organizationId: string; accountId: string },
  direction: 'cash_in' | 'cash_out',
  amountCents: number,
  createdAt: Date,
) {
  return withTransaction(pool, (tx) =>
    insertTransaction(tx, {
      organizationId: org.organizationId,
      accountId: org.accountId,
      direction,
      type: 'intent',
      sourceId: null,
      amountCents,
      date: DAY,
      // No workflow: no drainer serves this queue.
      taskQueue: 'test-undrained',
      createdAt,
    }),
  );
}

/**
 * One account's day through every kind of entry: two cash_in and a cash_out recorded at 15:00, 15:01, 15:02,
 * the first cash_in confirmed at 16:00, the window built at 23:00 (net 1000 − 300 = 700) and settled the
 * next day at 12:00. The second cash_in stays pending.
 */
async function dayOfAccount(pool: Pool, org: { organizationId: string; accountId: string }) {
  const cashIn = await record(pool, org, 'cash_in', 1000, at('15:00:00'));
  const pendingIn = await record(pool, org, 'cash_in', 50, at('15:01:00'));
  const cashOut = await record(pool, org, 'cash_out', 300, at('15:02:00'));
  await withTransaction(pool, (tx) => applyTransition(tx, { transactionId: cashIn.id, toStatus: 'available', now: at('16:00:00') }));
  const built = await withTransaction(pool, (tx) =>
    createWindowTransfer(tx, { accountId: org.accountId, windowDate: DAY, transferDate: DAY, now: at('23:00:00') }),
  );
  const transferId = built!.transfer.id;
  await withTransaction(pool, (tx) => settleTransfer(tx, transferId, new Date('2025-01-11T12:00:00Z')));
  return { cashIn, pendingIn, cashOut, transferId };
}

async function entriesOf(pool: Pool, accountId: string) {
  const { rows } = await pool.query<{
    kind: string;
    transaction_id: string | null;
    transfer_id: string | null;
    from_bucket: string;
    to_bucket: string;
    amount_cents: number;
    created_at: Date;
  }>(
    `SELECT kind, transaction_id, transfer_id, from_bucket, to_bucket, amount_cents, created_at FROM journal_entries
      WHERE account_id = $1 ORDER BY created_at, kind, transaction_id`,
    [accountId],
  );
  return rows;
}

describe('SPEC §9 the state machine, written once', () => {
  it('the transaction_transitions table the status trigger joins is exactly TRANSITIONS', async () => {
    const { rows } = await stack.pool.query<{ direction: string; from_status: string; to_status: string }>(
      `SELECT direction, from_status, to_status FROM transaction_transitions ORDER BY 1, 2, 3`,
    );
    const fromCode = Object.entries(TRANSITIONS)
      .flatMap(([direction, moves]) => Object.entries(moves).map(([from, to]) => ({ direction, from_status: from, to_status: to })))
      .sort((a, b) => `${a.direction} ${a.from_status} ${a.to_status}`.localeCompare(`${b.direction} ${b.from_status} ${b.to_status}`));
    expect(rows).toEqual(fromCode);
    await expect(stack.pool.query(`DELETE FROM transaction_transitions`)).rejects.toThrow(/append-only/);
  });

  it('the trigger refuses a move the table does not hold, and writes nothing for it', async () => {
    const org = await createTestOrg(stack.pool);
    const cashIn = await record(stack.pool, org, 'cash_in', 10, at('10:00:00'));
    await withTransaction(stack.pool, (tx) =>
      applyTransition(tx, { transactionId: cashIn.id, toStatus: 'available', now: at('10:01:00') }),
    );
    await expect(stack.pool.query(`UPDATE transactions SET status = 'pending' WHERE id = $1`, [cashIn.id])).rejects.toThrow(
      /cash_in cannot go from available to pending/,
    );
    expect((await entriesOf(stack.pool, org.accountId)).map((e) => e.kind)).toEqual(['cash_in_recorded', 'cash_in_confirmed']);
  });
});

describe('SPEC §21 the journal', () => {
  let org: TestOrg;
  let day: Awaited<ReturnType<typeof dayOfAccount>>;
  beforeAll(async () => {
    org = await createTestOrg(stack.pool);
    day = await dayOfAccount(stack.pool, org);
  });

  it('writes one entry per balance-changing transition, by the posting table, stamped when it happened', async () => {
    const t = (row: TransactionRow) => row.id;
    expect(await entriesOf(stack.pool, org.accountId)).toEqual([
      {
        kind: 'cash_in_recorded',
        transaction_id: t(day.cashIn),
        transfer_id: null,
        from_bucket: 'network',
        to_bucket: 'pending',
        amount_cents: 1000,
        created_at: at('15:00:00'),
      },
      {
        kind: 'cash_in_recorded',
        transaction_id: t(day.pendingIn),
        transfer_id: null,
        from_bucket: 'network',
        to_bucket: 'pending',
        amount_cents: 50,
        created_at: at('15:01:00'),
      },
      {
        kind: 'cash_out_recorded',
        transaction_id: t(day.cashOut),
        transfer_id: null,
        from_bucket: 'available',
        to_bucket: 'network',
        amount_cents: 300,
        created_at: at('15:02:00'),
      },
      {
        kind: 'cash_in_confirmed',
        transaction_id: t(day.cashIn),
        transfer_id: null,
        from_bucket: 'pending',
        to_bucket: 'available',
        amount_cents: 1000,
        created_at: at('16:00:00'),
      },
      {
        kind: 'transfer_created',
        transaction_id: null,
        transfer_id: day.transferId,
        from_bucket: 'available',
        to_bucket: 'in_transfer',
        amount_cents: 700,
        created_at: at('23:00:00'),
      },
      {
        kind: 'transfer_settled',
        transaction_id: null,
        transfer_id: day.transferId,
        from_bucket: 'in_transfer',
        to_bucket: 'operational',
        amount_cents: 700,
        created_at: new Date('2025-01-11T12:00:00Z'),
      },
    ]);
    expect(await journalViolations(stack.pool, [org.accountId])).toEqual([]);
  });

  it('refuses an entry outside the posting table, a second entry for a transition, and any UPDATE, DELETE or TRUNCATE', async () => {
    const insert = (kind: string, from: string, to: string, transactionId: string) =>
      stack.pool.query(
        `INSERT INTO journal_entries (id, organization_id, account_id, kind, transaction_id, from_bucket, to_bucket, amount_cents, created_at)
         VALUES (journal_entry_id(), $1, $2, $3, $4, $5, $6, 5, now())`,
        [org.organizationId, org.accountId, kind, transactionId, from, to],
      );
    await expect(insert('cash_in_recorded', 'network', 'available', day.pendingIn.id)).rejects.toThrow(/check constraint/);
    await expect(insert('cash_in_recorded', 'network', 'pending', day.cashIn.id)).rejects.toThrow(/journal_entries_of_transaction/);
    await expect(stack.pool.query(`UPDATE journal_entries SET amount_cents = 1 WHERE account_id = $1`, [org.accountId])).rejects.toThrow(
      /append-only/,
    );
    await expect(stack.pool.query(`DELETE FROM journal_entries WHERE account_id = $1`, [org.accountId])).rejects.toThrow(/append-only/);
    await expect(stack.pool.query(`TRUNCATE journal_entries`)).rejects.toThrow(/append-only/);
    expect(await entriesOf(stack.pool, org.accountId)).toHaveLength(6);
  });

  it('the cached balances are the sums of the postings, and account verify proves it', async () => {
    const { rows } = await stack.pool.query(
      `SELECT pending_cents::int AS pending, available_cents::int AS available, in_transfer_cents::int AS in_transfer
         FROM account_balance_totals WHERE account_id = $1`,
      [org.accountId],
    );
    expect(rows[0]).toEqual({ pending: 50, available: 0, in_transfer: 0 });
    const verify = await admin(['--json', 'account', 'verify', '--org', org.organizationId]);
    expect(verify.code).toBe(0);
    expect(JSON.parse(verify.stdout)).toMatchObject({ ok: true, accounts: [{ account_id: org.accountId, ok: true, journal: rows[0] }] });
  });

  it('GET /account/{id}/balances?at= answers the balances at any instant, exact to the entry, with or without snapshots', async () => {
    const call = apiClient(stack.url, org.apiKey);
    const expected: Array<[string, { pending: number; available: number; in_transfer: number }]> = [
      [`${DAY}T14:59:59.999Z`, { pending: 0, available: 0, in_transfer: 0 }],
      [`${DAY}T15:00:00.000Z`, { pending: 0, available: 0, in_transfer: 0 }],
      [`${DAY}T15:00:00.001Z`, { pending: 1000, available: 0, in_transfer: 0 }],
      [`${DAY}T15:30:00Z`, { pending: 1050, available: -300, in_transfer: 0 }],
      [`${DAY}T17:00:00+01:00`, { pending: 1050, available: -300, in_transfer: 0 }],
      [`${DAY}T17:00:00.001+01:00`, { pending: 50, available: 700, in_transfer: 0 }],
      [`${DAY}T23:59:00Z`, { pending: 50, available: 0, in_transfer: 700 }],
      ['2025-01-12T00:00:00Z', { pending: 50, available: 0, in_transfer: 0 }],
    ];
    const read = async () =>
      Promise.all(
        expected.map(async ([instant]) => (await call('GET', `/account/${org.accountId}/balances?at=${encodeURIComponent(instant)}`)).body),
      );
    const before = await read();
    for (const [index, [instant, balances]] of expected.entries()) {
      expect(before[index]).toEqual({ account_id: org.accountId, at: new Date(instant).toISOString(), ...balances });
    }
    // Snapshots in the middle of the day change where the sum starts, never what it is.
    await takeSnapshots(stack.pool, at('15:30:00'));
    await takeSnapshots(stack.pool, at('23:00:00'));
    expect(await read()).toEqual(before);
    expect(await journalViolations(stack.pool, [org.accountId])).toEqual([]);
    const now = await call('GET', `/account/${org.accountId}/balances`);
    expect(now.body).toMatchObject({ pending: 50, available: 0, in_transfer: 0 });
  });

  it('GET /account/{id}/entries pages newest first and filters by transaction, transfer and time', async () => {
    const call = apiClient(stack.url, org.apiKey);
    const first = await call('GET', `/account/${org.accountId}/entries?limit=4`);
    expect(first.status).toBe(200);
    expect(first.body.data.map((e: { kind: string }) => e.kind)).toEqual([
      'transfer_settled',
      'transfer_created',
      'cash_in_confirmed',
      'cash_out_recorded',
    ]);
    expect(first.body.data[1]).toEqual({
      id: expect.stringMatching(/^je_/),
      account_id: org.accountId,
      kind: 'transfer_created',
      transaction_id: null,
      transfer_id: day.transferId,
      postings: [
        { bucket: 'available', amount: -700 },
        { bucket: 'in_transfer', amount: 700 },
      ],
      created_at: at('23:00:00').toISOString(),
    });
    const second = await call('GET', `/account/${org.accountId}/entries?limit=4&cursor=${first.body.next_cursor}`);
    expect(second.body).toMatchObject({ has_more: false, next_cursor: null });
    expect(second.body.data).toHaveLength(2);
    const ofCashIn = await call('GET', `/account/${org.accountId}/entries?transaction_id=${day.cashIn.id}`);
    expect(ofCashIn.body.data.map((e: { kind: string }) => e.kind)).toEqual(['cash_in_confirmed', 'cash_in_recorded']);
    const ofTransfer = await call('GET', `/account/${org.accountId}/entries?transfer_id=${day.transferId}`);
    expect(ofTransfer.body.data).toHaveLength(2);
    const span = await call('GET', `/account/${org.accountId}/entries?created_at.gte=${DAY}T15:01:00Z&created_at.lt=${DAY}T16:00:00Z`);
    expect(span.body.data.map((e: { kind: string }) => e.kind)).toEqual(['cash_out_recorded', 'cash_in_recorded']);
  });

  it('GET /account/{id}/statement: opening, closing and totals per kind as JSON, every posting as CSV', async () => {
    const call = apiClient(stack.url, org.apiKey);
    const statement = await call('GET', `/account/${org.accountId}/statement?from=${DAY}&to=${DAY}`);
    expect(statement.status).toBe(200);
    expect(statement.body).toEqual({
      account_id: org.accountId,
      from: DAY,
      to: DAY,
      opening: { pending: 0, available: 0, in_transfer: 0 },
      closing: { pending: 50, available: 0, in_transfer: 700 },
      totals: {
        cash_in_recorded: { count: 2, amount: 1050 },
        cash_in_confirmed: { count: 1, amount: 1000 },
        cash_out_recorded: { count: 1, amount: 300 },
        transfer_created: { count: 1, amount: 700 },
        transfer_settled: { count: 0, amount: 0 },
      },
    });
    const csv = await fetch(`${stack.url}/account/${org.accountId}/statement?from=${DAY}&to=2025-01-11&format=csv`, {
      headers: { Authorization: `Bearer ${org.apiKey}` },
    });
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    const lines = (await csv.text()).trim().split('\n');
    expect(lines[0]).toBe('entry_id,kind,transaction_id,transfer_id,bucket,amount,created_at');
    expect(lines).toHaveLength(1 + 12);
    expect(lines.slice(1).reduce((sum, line) => sum + Number(line.split(',')[5]), 0)).toBe(0);
    expect(lines[lines.length - 1]).toMatch(
      new RegExp(`^je_\\w+,transfer_settled,,${day.transferId},operational,700,2025-01-11T12:00:00.000Z$`),
    );
    const cli = await admin(['account', 'statement', '--account', org.accountId, '--from', DAY, '--to', '2025-01-11', '--csv']);
    expect(cli.code).toBe(0);
    expect(cli.stdout.trim().split('\n')).toEqual(lines);
  });

  it('bad input is the error object and reads nothing across organizations', async () => {
    const call = apiClient(stack.url, org.apiKey);
    const other = await createTestOrg(stack.pool);
    const cases: Array<[string, number, string | undefined]> = [
      [`/account/${org.accountId}/balances?at=yesterday`, 400, 'at'],
      [`/account/${org.accountId}/balances?at=2025-02-30T00:00:00Z`, 400, 'at'],
      [`/account/${org.accountId}/statement?from=2025-01-11&to=2025-01-10`, 400, 'to'],
      [`/account/${org.accountId}/statement?from=2024-01-01&to=2025-01-01`, 400, 'to'],
      [`/account/${org.accountId}/statement?from=2024-01-01`, 400, 'to'],
      [`/account/account_${randomString(20)}/balances`, 404, undefined],
      [`/account/${other.accountId}/balances`, 404, undefined],
      [`/account/${other.accountId}/entries`, 404, undefined],
      [`/account/${other.accountId}/statement?from=${DAY}&to=${DAY}&format=csv`, 404, undefined],
    ];
    for (const [path, status, param] of cases) {
      const response = await call('GET', path);
      expect({ path, status: response.status }).toEqual({ path, status });
      expect(response.body.error).toMatchObject({ type: 'invalid_request_error', ...(param ? { param } : { code: 'not_found' }) });
    }
    // 366 days, both ends included, is the longest statement.
    expect((await call('GET', `/account/${org.accountId}/statement?from=2024-01-01&to=2024-12-31`)).status).toBe(200);
  });
});

describe('SPEC §21 the backfill', () => {
  it('rebuilds from the status history exactly the entries the live triggers wrote', async () => {
    const scratch = await createTestDatabase(`ledger_journal_backfill_${Date.now()}_${process.pid}`);
    const pool = createPool(scratch.databaseUrl, 2);
    try {
      await migrate(scratch.databaseUrl);
      const { organization, account } = await createOrganization(pool, { name: 'Backfill', kycRequired: false, environment: 'sandbox' });
      const second = await createAccount(pool, organization.id, 'second');
      await dayOfAccount(pool, { organizationId: organization.id, accountId: account.id });
      await record(pool, { organizationId: organization.id, accountId: second.id }, 'cash_out', 70, at('18:00:00'));
      const live = [...(await entriesOf(pool, account.id)), ...(await entriesOf(pool, second.id))];
      expect(live).toHaveLength(7);
      // The privileged path only an operator has: the append-only guard is a trigger, and replication role skips triggers.
      await withTransaction(pool, async (tx) => {
        await tx.query(`SET LOCAL session_replication_role = replica`);
        await tx.query(`DELETE FROM journal_entries`);
      });
      const { rows } = await pool.query<{ written: number }>(`SELECT journal_backfill()::int AS written`);
      expect(rows[0]!.written).toBe(7);
      expect([...(await entriesOf(pool, account.id)), ...(await entriesOf(pool, second.id))]).toEqual(live);
      expect((await pool.query(`SELECT journal_backfill()::int AS written`)).rows[0].written).toBe(0);
    } finally {
      await pool.end();
      await scratch.drop();
    }
  });
});

describe('SPEC §21 journal triggers and pooled connections', () => {
  test('withTransaction with discardConnection closes its connection afterwards; without it the connection is pooled again', async () => {
    // Postgres caches the trigger plans a statement over a whole window makes on its connection; a small write
    // reusing them ran 16× slower (docs/settlement.md, "The connection a window's transaction ran on"). The
    // settlement activities build and settle with discardConnection; this checks the option on a pool of one.
    const pool = createPool(stack.config.DATABASE_URL!, 1);
    try {
      const pidOf = async () => (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const before = await pidOf();
      const inside = await withTransaction(
        pool,
        async (tx) => (await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid,
        { discardConnection: true },
      );
      expect(inside).toBe(before);
      const after = await pidOf();
      expect(after).not.toBe(before);
      // Without the option the connection goes back to the pool.
      await withTransaction(pool, async () => undefined);
      expect(await pidOf()).toBe(after);
    } finally {
      await pool.end();
    }
  });
});
