/**
 * SPEC §25 a return file applied set-based (src/ach/returnsBatch.ts), on real Postgres and Temporal, the file
 * written by moov-io/ach's achcli: one file mixing every kind the bank sends back (returned debits, returned
 * credits of a withdrawal and of a refund, R02/R03, unauthorized codes, notifications of change, an unknown trace
 * number, a return applied by an earlier file, one named twice) applies each effect exactly once, with the amounts
 * and events the entries had when they were applied one after the other; the journal and balances hold; the file
 * again, as the same bytes or as other bytes naming the same entries, changes nothing.
 */
import { PRODUCTION_ACH_ENV } from './support/achSeed';
import { buildWindowFile, markFileDelivered } from '../src/ach/files';
import { settlementDateOf } from '../src/easternDates';
import { randomString } from '../src/ids';
import { journalViolations } from '../src/journal/invariants';
import { createLogger } from '../src/logger';
import { bankFile, closeWindow, importInbound, type BankItem } from './support/bankReturns';
import { eventDepartures } from './support/eventSchemas';
import { apiClient, createTestOrg, createTestUser, eventually, startStack, type Stack, type TestOrg } from './support/harness';
import { addBankAccount, admin, idempotencyKey } from './support/payments';

const ODFI = '091000019';
const accountNumber = () => `9${randomString(12).replace(/[^0-9]/g, '3')}`.slice(0, 12);

let stack: Stack;
let org: TestOrg;
let call: ReturnType<typeof apiClient>;

beforeAll(async () => {
  // A database of its own: a production window files every queued production entry of its database.
  stack = await startStack({
    ownDatabase: true,
    env: {
      ...PRODUCTION_ACH_ENV,
    },
  });
  org = await createTestOrg(stack.pool, { environment: 'production', write: 5000, read: 5000 });
  call = apiClient(stack.url, org.apiKey);
  await stack.pool.query(
    `INSERT INTO organization_ach (organization_id, company_id, company_name, updated_at) VALUES ($1, '1234567890', 'TEST COMPANY', now())`,
    [org.organizationId],
  );
}, 120_000);

afterAll(async () => {
  await stack?.stop();
});

interface Payment {
  userId: string;
  bankAccountId: string;
  intentId: string;
  transactionId: string;
  amount: number;
  /** Filled once filed: the entry of the payment's transaction. */
  entry: { id: string; trace: string; code: number };
}

/** A deposit of `amount` from a new user's new bank account. */
async function deposit(amount: number): Promise<Payment> {
  const userId = await createTestUser(stack.pool, org.organizationId);
  const { intent, bankAccountId } = await addBankAccount(call, userId, { account_number: accountNumber() }, amount);
  const transactionId = intent.transactions[0].id as string;
  return { userId, bankAccountId, intentId: intent.id as string, transactionId, amount, entry: { id: '', trace: '', code: 0 } };
}

async function entryOf(payment: Payment): Promise<Payment> {
  const { rows } = await stack.pool.query<{ id: string; trace_number: string; transaction_code: number }>(
    'SELECT id, trace_number, transaction_code FROM ach_entries WHERE transaction_id = $1',
    [payment.transactionId],
  );
  return { ...payment, entry: { id: rows[0]!.id, trace: rows[0]!.trace_number, code: rows[0]!.transaction_code } };
}

/** What a file could change; lifecycles moving on by themselves (transaction.status_changed) are not its doing. */
async function counts() {
  const { rows } = await stack.pool.query<Record<string, string>>(
    `SELECT (SELECT count(*) FROM disputes WHERE organization_id = $1) AS disputes,
            (SELECT count(*) FROM transactions WHERE organization_id = $1) AS transactions,
            (SELECT count(*) FROM events WHERE organization_id = $1 AND type <> 'transaction.status_changed') AS events,
            (SELECT count(*) FROM ach_entry_returns WHERE organization_id = $1) AS applied,
            (SELECT count(*) FROM ach_entries WHERE organization_id = $1 AND status = 'returned') AS returned,
            (SELECT count(*) FROM ach_exceptions WHERE organization_id = $1) AS exceptions,
            (SELECT string_agg(id || status || last4, ',' ORDER BY id) FROM bank_accounts WHERE organization_id = $1) AS accounts,
            (SELECT string_agg(id || status, ',' ORDER BY id) FROM users WHERE organization_id = $1) AS users,
            (SELECT string_agg(user_id || direction || day_used_cents || week_used_cents || month_used_cents, ',' ORDER BY user_id, direction)
               FROM user_limit_usage WHERE user_id IN (SELECT id FROM users WHERE organization_id = $1)) AS uses`,
    [org.organizationId],
  );
  return rows[0]!;
}

test('one file of every kind: each effect once, in the amounts and order of one entry at a time; the file again changes nothing', async () => {
  // Deposits to return (R01 twice, R03, R10), to correct (C01), one returned by an earlier file, and one refunded.
  const made = {
    r01a: await deposit(1100),
    r01b: await deposit(1200),
    r03: await deposit(1300),
    r10: await deposit(1400),
    c01: await deposit(1500),
    earlier: await deposit(1600),
    refunded: await deposit(5000),
  };
  const refund = await call('POST', '/refund', { intent_id: made.refunded.intentId, amount: 1500 }, idempotencyKey());
  expect(refund.status).toBe(200);
  const withdrawer = await deposit(100);
  const out = await call(
    'POST',
    '/intent',
    { direction: 'cash_out', user_id: withdrawer.userId, amount: 2000, currency: 'USD' },
    idempotencyKey(),
  );
  expect(out.body).toMatchObject({ status: 'approved', bank_account_id: withdrawer.bankAccountId });
  // The window batches the cash_out and the refund (a collection of 3500), which queues the cash_out's credit.
  // The settlement of today's window, run now: it batches the cash_out and the refund.
  expect(await closeWindow(stack, org, settlementDateOf(new Date(), stack.config.SETTLEMENT_CUTOFF))).toMatchObject({
    direction: 'collection',
    amount_cents: '3500',
    transaction_count: 2,
  });
  const built = (await buildWindowFile(stack.pool, stack.config, createLogger('silent'), `mixed-${randomString(8)}`, new Date()))!;
  await markFileDelivered(stack.pool, built.fileId, new Date());
  const sent = Object.fromEntries(await Promise.all(Object.entries(made).map(async ([k, p]) => [k, await entryOf(p)] as const))) as {
    [K in keyof typeof made]: Payment;
  };
  const withdrawal = await entryOf({ ...withdrawer, intentId: out.body.id, transactionId: out.body.transactions[0].id, amount: 2000 });
  const refundCredit = await entryOf({ ...made.refunded, transactionId: refund.body.transaction.id, amount: 1500 });
  expect([sent.r01a.entry.code, withdrawal.entry.code, refundCredit.entry.code]).toEqual([27, 22, 22]);

  const first = await importInbound(
    stack.pool,
    stack.config,
    'EARLIER.ach',
    await bankFile(ODFI, [{ trace: sent.earlier.entry.trace, code: 'R01' }]),
  );
  expect(first.file).toMatchObject({ returns_count: 1 });

  const unknownTrace = `${ODFI.slice(0, 8)}9${String(Date.now() % 1_000_000).padStart(6, '0')}`;
  const cold = `55${accountNumber()}`;
  const items: BankItem[] = [
    { trace: sent.r01a.entry.trace, code: 'R01', amount: 1100 },
    { trace: sent.r01b.entry.trace, code: 'R01', amount: 1200 },
    // The refund's credit came back first, so the deposit's return below takes all of it, not what the refund left.
    { trace: refundCredit.entry.trace, code: 'R02', amount: 1500, credit: true },
    { trace: sent.r03.entry.trace, code: 'R03', amount: 1300 },
    { trace: sent.r10.entry.trace, code: 'R10', amount: 1400 },
    { trace: withdrawal.entry.trace, code: 'R03', amount: 2000, credit: true },
    { trace: sent.refunded.entry.trace, code: 'R10', amount: 5000 },
    { trace: unknownTrace, code: 'R01', amount: 100 },
    { trace: sent.earlier.entry.trace, code: 'R01', amount: 1600 },
    { trace: sent.r01a.entry.trace, code: 'R01', amount: 1100 },
    { trace: sent.c01.entry.trace, code: 'C01', corrected: cold },
    // R03 disabled this bank account earlier in the file: corrected after, in file order.
    // Ends 0000, which accountNumber() (mostly 3s) all but never does: the events' last4 tell the two apart.
    { trace: sent.r03.entry.trace, code: 'C01', corrected: `66${accountNumber().slice(0, 8)}0000` },
  ];
  const before = await counts();
  const text = await bankFile(ODFI, items);
  const applied = await importInbound(stack.pool, stack.config, 'MIXED.ach', text);
  expect(applied).toMatchObject({
    outcome: 'ingested',
    file: { status: 'applied', entry_count: 12, returns_count: 7, changes_count: 2, exceptions_count: 1, duplicates_count: 2 },
  });
  const fileId = applied.file.id;

  // The money: a dispute per returned payment, with exactly one transaction of the dispute's amount.
  const { rows: disputes } = await stack.pool.query(
    `SELECT d.id, d.intent_id, d.ach_entry_id, d.code, d.status, d.amount_cents::int AS amount, d.returns_credit,
            array_agg(t.direction || ' ' || t.amount_cents ORDER BY t.created_at) AS transactions
       FROM disputes d JOIN transactions t ON t.source_id = d.id AND t.type = 'dispute'
      WHERE d.organization_id = $1 AND d.ach_entry_id <> $2 GROUP BY d.id ORDER BY d.amount_cents, d.code`,
    [org.organizationId, sent.earlier.entry.id],
  );
  expect(disputes.map((d) => [d.ach_entry_id, d.intent_id, d.code, d.status, d.amount, d.returns_credit, d.transactions])).toEqual([
    [sent.r01a.entry.id, made.r01a.intentId, 'R01', 'lost', 1100, false, ['cash_out 1100']],
    [sent.r01b.entry.id, made.r01b.intentId, 'R01', 'lost', 1200, false, ['cash_out 1200']],
    [sent.r03.entry.id, made.r03.intentId, 'R03', 'lost', 1300, false, ['cash_out 1300']],
    [sent.r10.entry.id, made.r10.intentId, 'R10', 'lost', 1400, false, ['cash_out 1400']],
    [refundCredit.entry.id, made.refunded.intentId, 'R02', 'won', 1500, true, ['cash_in 1500']],
    [withdrawal.entry.id, out.body.id, 'R03', 'won', 2000, true, ['cash_in 2000']],
    [sent.refunded.entry.id, made.refunded.intentId, 'R10', 'lost', 5000, false, ['cash_out 5000']],
  ]);
  const { rows: returnedRows } = await stack.pool.query(
    `SELECT r.entry_id, r.addenda_type, r.code, r.dispute_id FROM ach_entry_returns r WHERE r.inbound_file_id = $1 ORDER BY r.code, r.entry_id`,
    [fileId],
  );
  const disputeOf = new Map(disputes.map((d) => [d.ach_entry_id, d.id]));
  expect(returnedRows).toHaveLength(9);
  for (const row of returnedRows) expect(row.dispute_id).toBe(row.addenda_type === '99' ? disputeOf.get(row.entry_id) : null);
  expect(
    returnedRows
      .filter((r) => r.addenda_type === '98')
      .map((r) => r.entry_id)
      .sort(),
  ).toEqual([sent.c01.entry.id, sent.r03.entry.id].sort());
  const { rows: entries } = await stack.pool.query(`SELECT id, status FROM ach_entries WHERE organization_id = $1 AND file_id = $2`, [
    org.organizationId,
    built.fileId,
  ]);
  const returnedIds = [sent.r01a, sent.r01b, sent.r03, sent.r10, sent.refunded, refundCredit, withdrawal, sent.earlier].map(
    (p) => p.entry.id,
  );
  for (const entry of entries)
    expect([entry.id, entry.status]).toEqual([entry.id, returnedIds.includes(entry.id) ? 'returned' : 'delivered']);

  // The code effects: R02/R03 disabled, R10 suspended, C01 corrected; nothing else.
  const { rows: accounts } = await stack.pool.query(
    `SELECT id, status, disabled_reason, last4 FROM bank_accounts WHERE organization_id = $1`,
    [org.organizationId],
  );
  const account = new Map(accounts.map((a) => [a.id, a]));
  expect(account.get(made.r03.bankAccountId)).toMatchObject({
    status: 'disabled',
    disabled_reason: 'ACH return R03: No Account/Unable to Locate Account',
  });
  expect(account.get(withdrawer.bankAccountId)).toMatchObject({
    status: 'disabled',
    disabled_reason: 'ACH return R03: No Account/Unable to Locate Account',
  });
  expect(account.get(made.refunded.bankAccountId)).toMatchObject({ status: 'disabled', disabled_reason: 'ACH return R02: Account Closed' });
  expect(account.get(made.c01.bankAccountId)).toMatchObject({ status: 'active', last4: cold.slice(-4) });
  expect(accounts.filter((a) => a.status === 'disabled')).toHaveLength(3);
  const { rows: users } = await stack.pool.query(`SELECT id FROM users WHERE organization_id = $1 AND status = 'suspended'`, [
    org.organizationId,
  ]);
  expect(users.map((u) => u.id).sort()).toEqual([made.r10.userId, made.refunded.userId].sort());

  // Limits (SPEC §26): the returned deposits' use given back; the refund's returned credit took back what the refund
  // had given back before the deposit's return gave all of it back (in the other order it would end at 1500).
  const { rows: uses } = await stack.pool.query(
    `SELECT user_id, direction, day_used_cents::int AS day, week_used_cents::int AS week, month_used_cents::int AS month
       FROM user_limit_usage WHERE user_id IN (SELECT id FROM users WHERE organization_id = $1)`,
    [org.organizationId],
  );
  const useOf = (userId: string, direction: string) => uses.find((u) => u.user_id === userId && u.direction === direction);
  for (const p of [made.r01a, made.r01b, made.r03, made.r10, made.earlier, made.refunded])
    expect(useOf(p.userId, 'cash_in')).toMatchObject({ day: 0, week: 0, month: 0 });
  expect(useOf(made.c01.userId, 'cash_in')).toMatchObject({ day: 1500, week: 1500, month: 1500 });
  expect(useOf(withdrawer.userId, 'cash_out')).toMatchObject({ day: 0, week: 0, month: 0 });
  expect(useOf(withdrawer.userId, 'cash_in')).toMatchObject({ day: 100, week: 100, month: 100 });

  // The events: each effect's once, in file order, each entry's in the order it made them.
  // The file's events carry its instant (its transaction's clock); the transactions' own events are not counted here.
  const { rows: events } = await stack.pool.query<{ type: string; data: any }>(
    `SELECT type, data FROM events WHERE organization_id = $1 AND created_at = (SELECT received_at FROM ach_inbound_files WHERE id = $2)
        AND type NOT IN ('transaction.created', 'transaction.status_changed') ORDER BY seq`,
    [org.organizationId, fileId],
  );
  const ofFile = events.filter((e) => e.type !== 'ach.return_rate_exceeded');
  const label = (e: { type: string; data: any }) =>
    e.type === 'ach_entry.returned' || e.type.startsWith('dispute.')
      ? `${e.type} ${e.data.code}`
      : e.type === 'user.status_changed'
        ? `${e.type} ${e.data.id}`
        : `${e.type} ${e.data.id} ${e.data.status}`;
  expect(ofFile.map(label)).toEqual([
    'dispute.created R01',
    'dispute.resolved R01',
    'ach_entry.returned R01',
    'dispute.created R01',
    'dispute.resolved R01',
    'ach_entry.returned R01',
    'dispute.created R02',
    'dispute.resolved R02',
    `bank_account.disabled ${made.refunded.bankAccountId} disabled`,
    'ach_entry.returned R02',
    'dispute.created R03',
    'dispute.resolved R03',
    `bank_account.disabled ${made.r03.bankAccountId} disabled`,
    'ach_entry.returned R03',
    'dispute.created R10',
    'dispute.resolved R10',
    `user.status_changed ${made.r10.userId}`,
    'ach_entry.returned R10',
    'dispute.created R03',
    'dispute.resolved R03',
    `bank_account.disabled ${withdrawer.bankAccountId} disabled`,
    'ach_entry.returned R03',
    'dispute.created R10',
    'dispute.resolved R10',
    `user.status_changed ${made.refunded.userId}`,
    'ach_entry.returned R10',
    `bank_account.updated ${made.c01.bankAccountId} active`,
    `bank_account.updated ${made.r03.bankAccountId} disabled`,
  ]);
  const returnedEvents = ofFile.filter((e) => e.type === 'ach_entry.returned');
  expect(returnedEvents.map((e) => [e.data.id, e.data.dispute_id])).toEqual(
    [sent.r01a, sent.r01b, refundCredit, sent.r03, sent.r10, withdrawal, sent.refunded].map((p) => [p.entry.id, disputeOf.get(p.entry.id)]),
  );
  // The disable rendered the account before its correction; the correction, after the disable.
  const r03Events = ofFile.filter((e) => e.type.startsWith('bank_account.') && e.data.id === made.r03.bankAccountId);
  expect(r03Events[0]!.data.last4).not.toBe(r03Events[1]!.data.last4);
  for (const e of ofFile.filter((e) => e.type === 'dispute.created')) {
    const answer = await call('GET', `/dispute/${e.data.id}`);
    expect(answer.body).toEqual(expect.objectContaining({ id: e.data.id, status: e.data.status, amount: e.data.amount }));
  }
  const { rows: exceptions } = await stack.pool.query(`SELECT kind, trace_number FROM ach_exceptions WHERE inbound_file_id = $1`, [fileId]);
  expect(exceptions).toEqual([{ kind: 'unknown_trace', trace_number: unknownTrace }]);

  // The return rates' kept counts (one upsert per day for the file's statement) are what a scan of the returns finds.
  const rates = async () => {
    const { rows } = await stack.pool.query(
      `SELECT (SELECT json_build_object('returned', sum(returned), 'unauthorized', sum(unauthorized), 'administrative', sum(administrative))
                 FROM ach_return_counts WHERE organization_id = $1) AS kept,
              (SELECT json_build_object('returned', count(*), 'unauthorized', count(*) FILTER (WHERE r.code IN ('R05', 'R07', 'R10', 'R11', 'R29', 'R51')),
                                        'administrative', count(*) FILTER (WHERE r.code IN ('R02', 'R03', 'R04')))
                 FROM ach_entries e JOIN ach_entry_returns r ON r.entry_id = e.id AND r.addenda_type = '99'
                WHERE e.organization_id = $1 AND e.transaction_code IN (27, 37)) AS scanned`,
      [org.organizationId],
    );
    return rows[0];
  };
  // Six returned debits (the credits are not debits): two unauthorized (R10), one administrative (R03).
  expect(await rates()).toEqual({
    kept: { returned: 6, unauthorized: 2, administrative: 1 },
    scanned: { returned: 6, unauthorized: 2, administrative: 1 },
  });

  // The books: the journal's zero sums and every balance hold.
  expect(await journalViolations(stack.pool, [org.accountId])).toEqual([]);
  const verify = await admin(['--json', 'account', 'verify', '--org', org.organizationId], stack.config.DATABASE_URL);
  // With its output, so a mismatch names the account and the three figures.
  expect({ code: verify.code, stdout: verify.stdout }).toEqual({ code: 0, stdout: expect.stringContaining('"ok":true') });
  const { departures } = await eventDepartures(stack.url);
  expect((await call('GET', '/event?limit=100')).body.data.flatMap(departures)).toEqual([]);

  // The file again: the same bytes are the same file; other bytes naming the same entries apply nothing.
  const after = await counts();
  expect(after).not.toEqual(before);
  const again = await importInbound(stack.pool, stack.config, 'MIXED-again.ach', text);
  expect(again).toMatchObject({ outcome: 'already_ingested', file: { id: fileId } });
  const other = await importInbound(stack.pool, stack.config, 'MIXED-other.ach', await bankFile(ODFI, items));
  expect(other.file).toMatchObject({
    status: 'applied',
    entry_count: 12,
    returns_count: 0,
    changes_count: 0,
    exceptions_count: 1,
    duplicates_count: 11,
  });
  expect(await counts()).toEqual(after);
  expect((await rates()).kept).toEqual({ returned: 6, unauthorized: 2, administrative: 1 });
  expect(await journalViolations(stack.pool, [org.accountId])).toEqual([]);
}, 240_000);

test("debits are counted in 16 slots a day (0048): other users' bank-account deposits are recorded while a transaction holding a day's count is open", async () => {
  const withdrawer = await deposit(100);
  const out = await call(
    'POST',
    '/intent',
    { direction: 'cash_out', user_id: withdrawer.userId, amount: 50, currency: 'USD' },
    idempotencyKey(),
  );
  expect(out.body.status).toBe('approved');
  const depositors = await Promise.all(Array.from({ length: 12 }, () => deposit(100)));
  const open = await stack.pool.connect();
  let answered = 0;
  let posts: Array<Promise<{ status: number; body: { status: string } }>> = [];
  try {
    await open.query('BEGIN');
    // A debit queued, and so counted by the trigger of 0042/0048, in a transaction left open: it holds its row of
    // today's counts until it ends, as a recording transaction does until it commits.
    await open.query(
      `INSERT INTO ach_entries (organization_id, account_id, environment, transaction_id, bank_account_id, sec_code, transaction_code,
                                amount_cents, created_at, updated_at)
       SELECT organization_id, account_id, 'production', id, $2, 'PPD', 27, amount_cents, now(), now() FROM transactions WHERE id = $1`,
      [out.body.transactions[0].id, withdrawer.bankAccountId],
    );
    posts = depositors.map(async (depositor) => {
      const answer = await call(
        'POST',
        '/intent',
        { direction: 'cash_in', user_id: depositor.userId, amount: 100, currency: 'USD', bank_account_id: depositor.bankAccountId },
        idempotencyKey(),
      );
      answered += 1;
      return answer;
    });
    // With one row per organization and day every one of them waited for this transaction; in slots, a deposit
    // meets this transaction's slot one time in 16 (all 12 blocked before 0048; 6 or more answered after, but
    // for a chance of about 2 in a million).
    await eventually(async () => (answered >= 6 ? true : undefined), 20_000, 'half the deposits answered while the count is held');
  } finally {
    await open.query('ROLLBACK');
    open.release();
  }
  const answers = await Promise.all(posts);
  expect(answers.map((answer) => answer.body.status)).toEqual(answers.map(() => 'approved'));
});

test('a payment takes its balance before its return count, the order of a return file and of a window close (0049): none can deadlock another', async () => {
  // Found by the simulation with the SFTP bank (docs/reliability.md, seed 20): a return file's transaction held a
  // balance slot (its dispute transactions) and waited for the day's return counts (its applied rows' trigger),
  // while a POST /intent/batch held that counts slot (its debits' trigger, which fired first) and waited for the
  // balance slot; both tables' slot is the writing transaction's (balance_slot, 0005 and 0048), so they met.
  const { userId, bankAccountId } = await deposit(100);
  // Every slot's row there already, so that a writer locks an existing row (not an insert nobody else sees).
  await stack.pool.query(
    `INSERT INTO account_balances (account_id, slot, organization_id) SELECT $1, s, $2 FROM generate_series(0, 15) s ON CONFLICT DO NOTHING`,
    [org.accountId, org.organizationId],
  );
  await stack.pool.query(
    `INSERT INTO ach_return_counts (organization_id, day, slot)
     SELECT $1, (now() AT TIME ZONE 'UTC')::date, s FROM generate_series(0, 15) s ON CONFLICT DO NOTHING`,
    [org.organizationId],
  );
  const balances = await stack.pool.connect();
  const probe = await stack.pool.connect();
  let post: Promise<{ status: number; body: { status: string; transactions: Array<{ id: string }> } }> | undefined;
  try {
    await balances.query('BEGIN');
    // Every balance slot of the account held, as recording transactions hold theirs until they commit.
    await balances.query('SELECT 1 FROM account_balances WHERE account_id = $1 FOR UPDATE', [org.accountId]);
    const holder = (await balances.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    post = call(
      'POST',
      '/intent',
      { direction: 'cash_in', user_id: userId, amount: 700, currency: 'USD', bank_account_id: bankAccountId },
      idempotencyKey(),
    );
    await eventually(
      async () => {
        const { rows } = await stack.pool.query(
          `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND $1 = ANY(pg_blocking_pids(pid))`,
          [holder],
        );
        return rows.length > 0 ? true : undefined;
      },
      20_000,
      'the deposit waiting for its balance slot',
    );
    // Waiting there, it holds no return count yet: a writer of the counts goes on (NOWAIT fails at once if one is held).
    await probe.query('BEGIN');
    await expect(
      probe.query('SELECT 1 FROM ach_return_counts WHERE organization_id = $1 FOR UPDATE NOWAIT', [org.organizationId]),
    ).resolves.toBeDefined();
  } finally {
    await probe.query('ROLLBACK');
    probe.release();
    await balances.query('ROLLBACK');
    balances.release();
  }
  const answer = await post;
  expect(answer.body).toMatchObject({ status: 'approved', bank_account_id: bankAccountId });
  // Its debit was queued and counted all the same, after its balance.
  const { rows } = await stack.pool.query('SELECT transaction_code FROM ach_entries WHERE transaction_id = $1', [
    answer.body.transactions[0]!.id,
  ]);
  expect(rows).toEqual([{ transaction_code: 27 }]);
});
