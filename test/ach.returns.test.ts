/**
 * SPEC §25 returns and notifications of change, on real Postgres, Temporal and an OpenSSH SFTP server: files
 * WRITTEN BY moov-io/ach (achcli, from JSON) dropped into inbound/ and ingested by the inbound schedule's
 * workflow and activities. Each return applies once (the same bytes under another name change nothing), its
 * effects and events are there together, the journal holds, and bad files are kept as exceptions with nothing
 * changed.
 */
import { ScheduleOverlapPolicy } from '@temporalio/client';
import { PRODUCTION_ACH_ENV } from './support/achSeed';
import { DateTime } from 'luxon';
import { achFileBytes, buildWindowFile, markFileDelivered, settleFile } from '../src/ach/files';
import { settlementDateOf } from '../src/easternDates';
import { achScheduleId, ensureAchSchedule } from '../src/ach/schedule';
import { ingestInboundFile } from '../src/ach/inbound';
import { representTransfer } from '../src/ach/represent';
import { achInboundScheduleId, ensureAchInboundSchedule } from '../src/ach/inboundSchedule';
import { randomString } from '../src/ids';
import { journalViolations } from '../src/journal/invariants';
import { createLogger } from '../src/logger';
import { bankFile as writeBankFile, closeWindow, giveOperatorBankAccount } from './support/bankReturns';
import { apiClient, createTestOrg, createTestUser, eventually, startStack, type Stack, type TestOrg } from './support/harness';
import { addBankAccount, admin, idempotencyKey, statusOf } from './support/payments';
import { startSftpServer, type SftpServer } from './support/sftpServer';
import { eventDepartures } from './support/eventSchemas';
import { readWithAchcli } from './support/achcli';

type Call = ReturnType<typeof apiClient>;

const ODFI = '091000019';
const accountNumber = () => `9${Date.now() % 1_000_000}${randomString(8).replace(/[^0-9]/g, '3')}`.slice(0, 15);

interface Sent {
  transactionId: string;
  bankAccountId: string;
  userId: string;
  number: string;
  amount: number;
  trace: string;
  entryId: string;
}

/** One entry the bank sends back: `credit` when the original was a credit (returned with code 21, else 26); `sec` its batch's. */
type Item = { sent: Pick<Sent, 'number' | 'amount' | 'trace'>; code: string; corrected?: string; credit?: boolean; sec?: 'PPD' | 'CCD' };

/** A return / NOC file as the bank would send it back, written by moov-io/ach's achcli (test/support/bankFiles.ts). */
function bankFile(items: Item[]): Promise<string> {
  return writeBankFile(
    ODFI,
    items.map(({ sent, ...item }) => ({ ...item, trace: sent.trace, amount: sent.amount, accountNumber: sent.number })),
  );
}

describe('SPEC §25 production: the bank returns and corrects entries through inbound/, each applied exactly once', () => {
  let stack: Stack;
  let org: TestOrg;
  let call: Call;
  let server: SftpServer;

  beforeAll(async () => {
    server = await startSftpServer();
    // A database of its own: production windows take every queued production entry of the database, and
    // another suite's window running beside this one would claim this suite's entries into its own file.
    stack = await startStack({
      ownDatabase: true,
      env: {
        ...PRODUCTION_ACH_ENV,
        ...server.achEnv(),
        ACH_INBOUND_POLL_SECONDS: '3600',
      },
    });
    org = await createTestOrg(stack.pool, { environment: 'production', write: 5000, read: 5000 });
    call = apiClient(stack.url, org.apiKey);
    await stack.pool.query(
      `INSERT INTO organization_ach (organization_id, company_id, company_name, updated_at) VALUES ($1, '1234567890', 'TEST COMPANY', now())`,
      [org.organizationId],
    );
    expect(await ensureAchInboundSchedule(stack.temporal, stack.config.TEMPORAL_TASK_QUEUE, stack.config)).toEqual({
      scheduleId: achInboundScheduleId(stack.config.TEMPORAL_TASK_QUEUE),
      created: true,
    });
  });
  afterAll(async () => {
    await stack.temporal.schedule.getHandle(achInboundScheduleId(stack.config.TEMPORAL_TASK_QUEUE)).delete();
    await stack.stop();
    await server.stop();
  });

  /** Deposits of `amounts`, each from a new user's new bank account, filed and delivered to the bank. */
  async function sendDebits(amounts: number[]): Promise<Sent[]> {
    const made = [];
    for (const amount of amounts) {
      const userId = await createTestUser(stack.pool, org.organizationId);
      const number = accountNumber();
      const { intent, bankAccountId } = await addBankAccount(call, userId, { account_number: number }, amount);
      made.push({ userId, number, amount, bankAccountId, transactionId: intent.transactions[0].id as string });
    }
    const built = (await buildWindowFile(stack.pool, stack.config, createLogger('silent'), `test-${randomString(8)}`, new Date()))!;
    await markFileDelivered(stack.pool, built.fileId, new Date());
    const { rows } = await stack.pool.query<{ transaction_id: string; id: string; trace_number: string }>(
      'SELECT transaction_id, id, trace_number FROM ach_entries WHERE transaction_id = ANY($1)',
      [made.map((m) => m.transactionId)],
    );
    return made.map((m) => {
      const row = rows.find((r) => r.transaction_id === m.transactionId)!;
      return { ...m, trace: row.trace_number, entryId: row.id };
    });
  }

  /** Fires the inbound schedule now and waits until `name` is ingested (or kept as rejected). */
  async function poll(
    name: string,
  ): Promise<{ id: string; status: string; exceptions_count: number; returns_count: number; changes_count: number }> {
    // BUFFER_ONE: the schedule skips a run while one is under way (ScheduleOverlapPolicy.SKIP), and the run
    // that ingested the previous files may still be finishing (its last activity, its completion), so a plain
    // trigger could be dropped and `name` left for the next hourly poll. Buffered, it runs once that one ends.
    await stack.temporal.schedule
      .getHandle(achInboundScheduleId(stack.config.TEMPORAL_TASK_QUEUE))
      .trigger(ScheduleOverlapPolicy.BUFFER_ONE);
    return eventually(
      async () => {
        const { rows } = await stack.pool.query(
          'SELECT n.file_name, f.* FROM ach_inbound_names n JOIN ach_inbound_files f ON f.sha256 = n.sha256 WHERE n.file_name = $1',
          [name],
        );
        return rows[0];
      },
      30_000,
      `${name} ingested`,
    );
  }

  /** What a file could change; lifecycles moving on by themselves (transaction.status_changed) are not its doing. */
  const counts = () => countsOf(org.organizationId);
  const countsOf = async (organizationId: string) => {
    const { rows } = await stack.pool.query<Record<string, string>>(
      `SELECT (SELECT count(*) FROM disputes WHERE organization_id = $1) AS disputes, (SELECT count(*) FROM transactions WHERE organization_id = $1) AS transactions,
              (SELECT count(*) FROM events WHERE organization_id = $1 AND type <> 'transaction.status_changed') AS events, (SELECT count(*) FROM ach_entry_returns) AS returns,
              (SELECT count(*) FROM ach_entries WHERE status = 'returned') AS returned, (SELECT count(*) FROM ach_exceptions WHERE organization_id = $1) AS exceptions`,
      [organizationId],
    );
    return rows[0]!;
  };

  test('R01, R03, R10 and a C01 in one file: disputes lost with their cash_out, account disabled, user suspended, account corrected; events after effects', async () => {
    const [r01, r03, r10, c01] = await sendDebits([1500, 2500, 3500, 4500]);
    const corrected = `7${accountNumber().slice(1)}`;
    const text = await bankFile([
      { sent: r01!, code: 'R01' },
      { sent: r03!, code: 'R03' },
      { sent: r10!, code: 'R10' },
      { sent: c01!, code: 'C01', corrected: corrected.padEnd(29) },
    ]);
    server.writeFile('inbound/RET-1.ach', text);
    const file = await poll('RET-1.ach');
    expect(file).toMatchObject({ status: 'applied', returns_count: 3, changes_count: 1, exceptions_count: 0 });

    const { rows: disputes } = await stack.pool.query(
      `SELECT d.intent_id, d.code, d.status, d.amount_cents::int AS amount, t.direction, t.type FROM disputes d JOIN transactions t ON t.source_id = d.id
        WHERE d.organization_id = $1 ORDER BY d.amount_cents`,
      [org.organizationId],
    );
    expect(disputes.map((d) => [d.code, d.status, d.amount, d.direction, d.type])).toEqual([
      ['R01', 'lost', 1500, 'cash_out', 'dispute'],
      ['R03', 'lost', 2500, 'cash_out', 'dispute'],
      ['R10', 'lost', 3500, 'cash_out', 'dispute'],
    ]);
    const { rows: entries } = await stack.pool.query(
      'SELECT id, status, settled_at FROM ach_entries WHERE id = ANY($1) ORDER BY amount_cents',
      [[r01!.entryId, r03!.entryId, r10!.entryId, c01!.entryId]],
    );
    // Returned before its window settled it: settled first (forward only), then returned; the NOC's entry is as it was.
    expect(entries.map((e) => [e.status, e.settled_at !== null])).toEqual([
      ['returned', true],
      ['returned', true],
      ['returned', true],
      ['delivered', false],
    ]);
    const { rows: accounts } = await stack.pool.query('SELECT id, status, disabled_reason, last4 FROM bank_accounts WHERE id = ANY($1)', [
      [r03!.bankAccountId, c01!.bankAccountId, r01!.bankAccountId],
    ]);
    const byId = new Map(accounts.map((a) => [a.id, a]));
    expect(byId.get(r03!.bankAccountId)).toMatchObject({
      status: 'disabled',
      disabled_reason: 'ACH return R03: No Account/Unable to Locate Account',
    });
    expect(byId.get(r01!.bankAccountId)).toMatchObject({ status: 'active' });
    expect(byId.get(c01!.bankAccountId)).toMatchObject({ status: 'active', last4: corrected.slice(-4) });
    const { rows: users } = await stack.pool.query('SELECT id, status FROM users WHERE id = ANY($1)', [[r10!.userId, r01!.userId]]);
    expect(Object.fromEntries(users.map((u) => [u.id, u.status]))).toEqual({ [r10!.userId]: 'suspended', [r01!.userId]: 'enabled' });

    const { rows: events } = await stack.pool.query<{ type: string; data: any }>(
      `SELECT type, data FROM events WHERE organization_id = $1 AND type IN ('ach_entry.returned', 'bank_account.disabled', 'user.status_changed', 'bank_account.updated', 'dispute.created') ORDER BY seq`,
      [org.organizationId],
    );
    const returned = events
      .filter((e) => e.type === 'ach_entry.returned')
      .map((e) => [e.data.code, e.data.trace_number, e.data.transaction_id, e.data.reason]);
    expect(returned).toEqual([
      ['R01', r01!.trace, r01!.transactionId, 'Insufficient Funds'],
      ['R03', r03!.trace, r03!.transactionId, 'No Account/Unable to Locate Account'],
      ['R10', r10!.trace, r10!.transactionId, expect.stringContaining('Not Authorized')],
    ]);
    expect(events.find((e) => e.type === 'bank_account.disabled')!.data).toMatchObject({ id: r03!.bankAccountId, status: 'disabled' });
    expect(events.find((e) => e.type === 'user.status_changed')!.data).toMatchObject({
      id: r10!.userId,
      status: 'suspended',
      previous_status: 'enabled',
    });
    expect(events.find((e) => e.type === 'bank_account.updated')!.data).toMatchObject({
      id: c01!.bankAccountId,
      last4: corrected.slice(-4),
      change_code: 'C01',
    });
    // Nothing anywhere holds the corrected number in the clear.
    const { rows: leaks } = await stack.pool.query(`SELECT count(*)::int AS n FROM events WHERE data::text LIKE '%' || $1 || '%'`, [
      corrected,
    ]);
    expect(leaks[0].n).toBe(0);

    // The returned deposits still reach `available` (settled first), and the dispute's cash_out moves on: the journal holds.
    await eventually(
      async () => {
        const answer = await call('GET', `/transaction/${r01!.transactionId}`);
        return answer.body.status === 'available' ? true : undefined;
      },
      30_000,
      'the returned deposit confirmed',
    );
    expect(await journalViolations(stack.pool, [org.accountId])).toEqual([]);
  });

  test('the same bytes under another name, and by hand, change nothing; a return already applied in another file is a duplicate', async () => {
    const [sent] = await sendDebits([700]);
    const text = await bankFile([{ sent: sent!, code: 'R01' }]);
    server.writeFile('inbound/RET-2.ach', text);
    const first = await poll('RET-2.ach');
    expect(first).toMatchObject({ status: 'applied', returns_count: 1 });
    const before = await counts();

    server.writeFile('inbound/RET-2-again.ach', text);
    const again = await poll('RET-2-again.ach');
    expect(again.id).toBe(first.id);
    const cli = await admin(['--json', 'ach', 'inbound', 'import', `${server.root}/inbound/RET-2.ach`], stack.config.DATABASE_URL);
    expect(cli.code).toBe(0);
    expect(JSON.parse(cli.stdout)).toMatchObject({ outcome: 'already_ingested', file: { id: first.id } });

    // Other bytes (another creation time) naming the same return: the file is new, the return is not applied twice.
    server.writeFile('inbound/RET-2-other.ach', await bankFile([{ sent: sent!, code: 'R01' }]));
    const other = await poll('RET-2-other.ach');
    expect(other).toMatchObject({ status: 'applied', returns_count: 0, exceptions_count: 0, duplicates_count: 1 });
    expect(await counts()).toEqual(before);
  });

  test('bad files (truncated, wrong totals), an unknown trace number and another ODFI are exceptions, and change nothing', async () => {
    const [sent] = await sendDebits([900]);
    const good = await bankFile([{ sent: sent!, code: 'R02' }]);
    const before = await counts();
    const lines = good.split('\n');
    server.writeFile('inbound/BAD-truncated.ach', lines.slice(0, 3).join('\n'));
    // The file control's total debits off by one cent.
    const control = lines.findIndex((l) => l.startsWith('9') && !l.startsWith('9999'));
    const total = lines[control]!.slice(31, 43);
    lines[control] = lines[control]!.slice(0, 31) + String(Number(total) + 1).padStart(12, '0') + lines[control]!.slice(43);
    server.writeFile('inbound/BAD-totals.ach', lines.join('\n'));
    server.writeFile('inbound/BAD-unknown.ach', await bankFile([{ sent: { ...sent!, trace: `${ODFI.slice(0, 8)}9999999` }, code: 'R01' }]));
    server.writeFile(
      'inbound/BAD-foreign.ach',
      await bankFile([{ sent: { ...sent!, trace: `02100002${sent!.trace.slice(8)}` }, code: 'R01' }]),
    );

    expect(await poll('BAD-truncated.ach')).toMatchObject({ status: 'rejected', exceptions_count: 1 });
    expect(await poll('BAD-totals.ach')).toMatchObject({ status: 'rejected', exceptions_count: 1 });
    expect(await poll('BAD-unknown.ach')).toMatchObject({ status: 'applied', returns_count: 0, exceptions_count: 1 });
    expect(await poll('BAD-foreign.ach')).toMatchObject({ status: 'applied', returns_count: 0, exceptions_count: 1 });
    expect(await counts()).toEqual(before);

    const { rows } = await stack.pool.query(
      `SELECT f.file_name, x.kind, x.trace_number, x.detail FROM ach_exceptions x JOIN ach_inbound_files f ON f.id = x.inbound_file_id
        WHERE f.file_name LIKE 'BAD-%' ORDER BY f.file_name`,
    );
    expect(rows.map((r) => [r.file_name, r.kind])).toEqual([
      ['BAD-foreign.ach', 'foreign_odfi'],
      ['BAD-totals.ach', 'unparseable_file'],
      ['BAD-truncated.ach', 'unparseable_file'],
      ['BAD-unknown.ach', 'unknown_trace'],
    ]);
    expect(rows.find((r) => r.file_name === 'BAD-totals.ach')!.detail).toMatch(/total debit/i);
    const cli = await admin(['--json', 'ach', 'exceptions'], stack.config.DATABASE_URL);
    expect(cli.code).toBe(0);
    expect(JSON.parse(cli.stdout).exceptions.map((x: { file_name: string }) => x.file_name)).toEqual(
      expect.arrayContaining(['BAD-unknown.ach', 'BAD-foreign.ach']),
    );
    // The good file still applies afterwards: R02 disables the account.
    server.writeFile('inbound/GOOD.ach', good);
    expect(await poll('GOOD.ach')).toMatchObject({ status: 'applied', returns_count: 1 });
    const { rows: account } = await stack.pool.query('SELECT status FROM bank_accounts WHERE id = $1', [sent!.bankAccountId]);
    expect(account[0].status).toBe('disabled');
  });
  test('a crash in the middle of a file applies none of it; the retry applies all of it, once', async () => {
    const [first, second] = await sendDebits([1100, 1200]);
    const text = await bankFile([
      { sent: first!, code: 'R01' },
      { sent: second!, code: 'R01' },
    ]);
    const deps = {
      config: stack.config,
      pool: stack.pool,
      log: createLogger('silent'),
      services: { taskQueue: stack.config.TEMPORAL_TASK_QUEUE },
    };
    const before = await counts();
    // Hold the second entry's row: the ingest applies the first entry, then waits on the second; then its backend dies.
    const holder = await stack.pool.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM ach_entries WHERE id = $1 FOR UPDATE', [second!.entryId]);
    const crashed = ingestInboundFile(deps, { fileName: 'CRASH.ach', bytes: Buffer.from(text), source: 'cli', now: new Date() }).then(
      () => 'finished',
      (error: Error) => error.message,
    );
    const pid = await eventually(
      async () => {
        const { rows } = await stack.pool.query(
          `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FROM ach_entries e LEFT JOIN transactions%' AND pid <> pg_backend_pid()`,
        );
        return rows[0]?.pid as number | undefined;
      },
      15_000,
      'the ingest waiting on the second entry',
    );
    await stack.pool.query('SELECT pg_terminate_backend($1)', [pid]);
    expect(await crashed).toMatch(/terminat/i);
    await holder.query('ROLLBACK');
    holder.release();
    expect(await counts()).toEqual(before);
    const { rows: files } = await stack.pool.query(`SELECT 1 FROM ach_inbound_files WHERE file_name = 'CRASH.ach'`);
    expect(files).toEqual([]);

    const retried = await ingestInboundFile(deps, { fileName: 'CRASH.ach', bytes: Buffer.from(text), source: 'cli', now: new Date() });
    expect(retried).toMatchObject({ outcome: 'ingested', file: { status: 'applied', returns_count: 2 } });
    const { rows: entries } = await stack.pool.query('SELECT status FROM ach_entries WHERE id = ANY($1)', [
      [first!.entryId, second!.entryId],
    ]);
    expect(entries.map((e) => e.status)).toEqual(['returned', 'returned']);
  });

  /**
   * A second organization, with an operator bank account: a cash_out and a refund, each a PPD credit to a user,
   * and the window's collection, a CCD debit of the operator's account, all filed and delivered.
   */
  async function sendCredits() {
    const other = await createTestOrg(stack.pool, { environment: 'production', write: 5000, read: 5000 });
    const otherCall = apiClient(stack.url, other.apiKey);
    await stack.pool.query(
      `INSERT INTO organization_ach (organization_id, company_id, company_name, updated_at) VALUES ($1, '1234567890', 'TEST COMPANY', now())`,
      [other.organizationId],
    );
    const operatorNumber = accountNumber();
    await giveOperatorBankAccount(stack, other.accountId, operatorNumber);
    const withdrawer = { userId: await createTestUser(stack.pool, other.organizationId), number: accountNumber() };
    await addBankAccount(otherCall, withdrawer.userId, { account_number: withdrawer.number }, 100);
    const out = await otherCall(
      'POST',
      '/intent',
      { direction: 'cash_out', user_id: withdrawer.userId, amount: 2000, currency: 'USD' },
      idempotencyKey(),
    );
    expect(out.body).toMatchObject({ status: 'approved', bank_account_id: expect.stringMatching(/^ba_/) });
    const refunded = { userId: await createTestUser(stack.pool, other.organizationId), number: accountNumber() };
    const deposit = await addBankAccount(otherCall, refunded.userId, { account_number: refunded.number }, 5000);
    const refund = await otherCall('POST', '/refund', { intent_id: deposit.intent.id, amount: 1500 }, idempotencyKey());
    expect(refund.status).toBe(200);
    // Window D: the cash_out and the refund (the deposits wait for their debits to settle): a collection of 3500.
    const windowDate = settlementDateOf(new Date(), stack.config.SETTLEMENT_CUTOFF);
    const transfer = await closeWindow(stack, other, windowDate);
    expect(transfer).toMatchObject({ direction: 'collection', amount_cents: '3500', transaction_count: 2 });
    const built = (await buildWindowFile(stack.pool, stack.config, createLogger('silent'), `test-${randomString(8)}`, new Date()))!;
    await markFileDelivered(stack.pool, built.fileId, new Date());
    const entryOf = async (column: 'transaction_id' | 'transfer_id', id: string) => {
      const { rows } = await stack.pool.query<{ id: string; trace_number: string; transaction_code: number; status: string }>(
        `SELECT id, trace_number, transaction_code, status FROM ach_entries WHERE ${column} = $1`,
        [id],
      );
      return rows[0]!;
    };
    const cashOutId = out.body.transactions[0].id as string;
    const refundTransactionId = refund.body.transaction.id as string;
    return {
      other,
      otherCall,
      windowDate,
      transfer,
      deposit,
      withdrawal: {
        ...withdrawer,
        intentId: out.body.id as string,
        transactionId: cashOutId,
        entry: await entryOf('transaction_id', cashOutId),
      },
      refund: { ...refunded, transactionId: refundTransactionId, entry: await entryOf('transaction_id', refundTransactionId) },
      operator: { number: operatorNumber, entry: await entryOf('transfer_id', transfer.id) },
    };
  }

  test('returned credits (a cash_out R03, a refund R02) put the money back as won disputes that net in the next window; a returned CCD entry is an exception and ach.transfer_returned; each once', async () => {
    const sent = await sendCredits();
    const { other, otherCall, withdrawal, refund, operator, transfer } = sent;
    expect([withdrawal.entry.transaction_code, refund.entry.transaction_code, operator.entry.transaction_code]).toEqual([22, 22, 27]);
    const returnFile = () =>
      bankFile([
        { sent: { number: withdrawal.number, amount: 2000, trace: withdrawal.entry.trace_number }, code: 'R03', credit: true },
        { sent: { number: refund.number, amount: 1500, trace: refund.entry.trace_number }, code: 'R02', credit: true },
        { sent: { number: operator.number, amount: 3500, trace: operator.entry.trace_number }, code: 'R01', sec: 'CCD' },
      ]);
    const text = await returnFile();
    server.writeFile('inbound/CREDITS.ach', text);
    // The CCD return is applied (returned, its event emitted) and kept as an exception row for the operator.
    expect(await poll('CREDITS.ach')).toMatchObject({ status: 'applied', returns_count: 3, exceptions_count: 0 });

    // The credits: each a dispute won at birth with one cash_in `dispute` transaction, naming the intent the credit paid.
    const { rows: disputes } = await stack.pool.query(
      `SELECT id, intent_id, code, status, amount_cents::int AS amount, returns_credit, ach_entry_id FROM disputes WHERE organization_id = $1 ORDER BY amount_cents`,
      [other.organizationId],
    );
    expect(disputes.map((d) => [d.intent_id, d.code, d.status, d.amount, d.returns_credit, d.ach_entry_id])).toEqual([
      [sent.deposit.intent.id, 'R02', 'won', 1500, true, refund.entry.id],
      [withdrawal.intentId, 'R03', 'won', 2000, true, withdrawal.entry.id],
    ]);
    const backIds: string[] = [];
    for (const dispute of disputes) {
      const answer = await otherCall('GET', `/dispute/${dispute.id}`);
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ status: 'won', amount: dispute.amount, code: dispute.code });
      expect(answer.body.transactions.map((t: { direction: string; type: string }) => [t.direction, t.type])).toEqual([
        ['cash_in', 'dispute'],
      ]);
      backIds.push(answer.body.transactions[0].id);
    }
    // The bank moved that money already: production's rail confirms it at once (no network would ever signal it).
    for (const id of backIds) await statusOf(otherCall, id, 'available');
    // The originals move only forward: the cash_out stays in its transfer, the entries are returned.
    expect((await otherCall('GET', `/transaction/${withdrawal.transactionId}`)).body).toMatchObject({
      status: 'in_transfer',
      transfer: expect.objectContaining({ id: transfer.id }),
    });
    const { rows: entries } = await stack.pool.query('SELECT status FROM ach_entries WHERE id = ANY($1)', [
      [withdrawal.entry.id, refund.entry.id, operator.entry.id],
    ]);
    expect(entries.map((e) => e.status)).toEqual(['returned', 'returned', 'returned']);
    // R02/R03 disable the bank accounts the credits went to.
    const { rows: accounts } = await stack.pool.query(`SELECT status FROM bank_accounts WHERE user_id = ANY($1)`, [
      [withdrawal.userId, refund.userId],
    ]);
    expect(accounts.map((a) => a.status)).toEqual(['disabled', 'disabled']);

    // The CCD entry: an exception and ach.transfer_returned; the transfer and its members are as they were.
    const { rows: exceptions } = await stack.pool.query(`SELECT kind, code, entry_id FROM ach_exceptions WHERE organization_id = $1`, [
      other.organizationId,
    ]);
    expect(exceptions).toEqual([{ kind: 'transfer_returned', code: 'R01', entry_id: operator.entry.id }]);
    const { rows: events } = await stack.pool.query<{ type: string; data: any }>(
      `SELECT type, data FROM events WHERE organization_id = $1 AND type IN ('ach.transfer_returned', 'ach_entry.returned', 'dispute.resolved') ORDER BY seq`,
      [other.organizationId],
    );
    expect(events.map((e) => [e.type, e.data.code])).toEqual([
      ['dispute.resolved', 'R03'],
      ['ach_entry.returned', 'R03'],
      ['dispute.resolved', 'R02'],
      ['ach_entry.returned', 'R02'],
      ['ach.transfer_returned', 'R01'],
      ['ach_entry.returned', 'R01'],
    ]);
    expect(events[1]!.data).toMatchObject({ transaction_id: withdrawal.transactionId, dispute_id: disputes[1].id });
    expect(events[4]!.data).toMatchObject({ id: transfer.id, entry_id: operator.entry.id, trace_number: operator.entry.trace_number });
    expect(events[5]!.data).toMatchObject({ transfer_id: transfer.id, dispute_id: null });
    const { rows: transfers } = await stack.pool.query('SELECT status, amount_cents::int AS amount FROM transfers WHERE id = $1', [
      transfer.id,
    ]);
    expect(transfers).toEqual([{ status: 'pending', amount: 3500 }]);

    // Exactly once: the same bytes under another name, and other bytes naming the same returns, change nothing.
    const before = await countsOf(other.organizationId);
    server.writeFile('inbound/CREDITS-again.ach', text);
    expect((await poll('CREDITS-again.ach')).returns_count).toBe(3);
    server.writeFile('inbound/CREDITS-other.ach', await returnFile());
    expect(await poll('CREDITS-other.ach')).toMatchObject({
      status: 'applied',
      returns_count: 0,
      exceptions_count: 0,
      duplicates_count: 3,
    });
    expect(await countsOf(other.organizationId)).toEqual(before);

    // Window D+1 nets the money back: a disbursement of 3500 of exactly the two won disputes' cash_in.
    const next = DateTime.fromISO(sent.windowDate).plus({ days: 1 }).toISODate()!;
    const netted = await closeWindow(stack, other, next);
    expect(netted).toMatchObject({ direction: 'disbursement', amount_cents: '3500', transaction_count: 2 });
    const { rows: members } = await stack.pool.query('SELECT id FROM transactions WHERE transfer_id = $1 ORDER BY id', [netted.id]);
    expect(members.map((m) => m.id)).toEqual([...backIds].sort());
    expect(await journalViolations(stack.pool, [other.accountId])).toEqual([]);
    const verify = await admin(['--json', 'account', 'verify', '--org', other.organizationId], stack.config.DATABASE_URL);
    expect(verify.code).toBe(0);

    // The refund's credit came back, so the deposit's later return (R10) takes all of it back, not what the refund left.
    const debit = await stack.pool.query<{ trace_number: string }>('SELECT trace_number FROM ach_entries WHERE transaction_id = $1', [
      sent.deposit.intent.transactions[0].id,
    ]);
    server.writeFile(
      'inbound/DEPOSIT-R10.ach',
      await bankFile([{ sent: { number: refund.number, amount: 5000, trace: debit.rows[0]!.trace_number }, code: 'R10' }]),
    );
    expect(await poll('DEPOSIT-R10.ach')).toMatchObject({ returns_count: 1, exceptions_count: 0 });
    const { rows: lost } = await stack.pool.query(
      `SELECT status, amount_cents::int AS amount FROM disputes WHERE intent_id = $1 AND NOT returns_credit`,
      [sent.deposit.intent.id],
    );
    expect(lost).toEqual([{ status: 'lost', amount: 5000 }]);
    expect(await journalViolations(stack.pool, [other.accountId])).toEqual([]);
    const { departures } = await eventDepartures(stack.url);
    const page = await otherCall('GET', '/event?limit=100');
    expect(page.body.data.flatMap(departures)).toEqual([]);
  }, 240_000);

  /** An operator's action refused: exit 1 and `invalid_state` with the reason, nothing changed. */
  const expectRefused = (answer: { code: number; stdout: string }, reason: string) =>
    expect([answer.code, JSON.parse(answer.stdout)]).toEqual([
      1,
      { error: { code: 'invalid_state', message: expect.stringContaining(reason) } },
    ]);

  /** GET /ach/exceptions' `transfer_returned` exceptions of a transfer, newest first: the trace each names, and the operator's action. */
  async function operatorActions(orgCall: Call, transferId: string): Promise<[string, unknown][]> {
    const page = await orgCall('GET', '/ach/exceptions?kind=transfer_returned&limit=100');
    expect(page.status).toBe(200);
    return page.body.data
      .filter((x: { transfer_id: string }) => x.transfer_id === transferId)
      .map((x: { trace_number: string; operator_action: unknown }) => [x.trace_number, x.operator_action]);
  }

  /** The bank returns a transfer's CCD entry of 3,500 cents R01 in the file `name`, which the poll applies. */
  async function returnTransferEntry(name: string, number: string, trace: string) {
    server.writeFile(`inbound/${name}`, await bankFile([{ sent: { number, amount: 3500, trace }, code: 'R01', sec: 'CCD' }]));
    expect(await poll(name)).toMatchObject({ status: 'applied', returns_count: 1, exceptions_count: 0 });
  }

  test('a returned CCD entry waits for the operator, who presents the transfer again (ach transfer represent): a new entry in a RETRY PYMT batch moov reads, whose settlement settles the transfer; refused unless returned, at most twice', async () => {
    const { other, otherCall, operator, transfer } = await sendCredits();
    const represent = () => admin(['--json', 'ach', 'transfer', 'represent', transfer.id], stack.config.DATABASE_URL);
    const refused = async (reason: string) => expectRefused(await represent(), reason);
    const entriesOfTransfer = async () =>
      (
        await stack.pool.query<{ id: string; status: string; represents: string | null; transaction_code: number }>(
          'SELECT id, status, represents, transaction_code FROM ach_entries WHERE transfer_id = $1 ORDER BY created_at, id',
          [transfer.id],
        )
      ).rows;
    // Its entry not returned: refused, nothing queued.
    await refused(`its entry ${operator.entry.id} is delivered; only a returned entry is presented again`);
    expect(await entriesOfTransfer()).toHaveLength(1);

    const returnCcd = (name: string, trace: string) => returnTransferEntry(name, operator.number, trace);
    await returnCcd('CCD-R01.ach', operator.entry.trace_number);
    // Returned before it settled: nothing moves until the operator acts; the transfer waits for the network.
    expect((await otherCall('GET', `/transfer/${transfer.id}`)).body).toMatchObject({ status: 'pending' });

    const first = await represent();
    expect(first.code).toBe(0);
    const again = JSON.parse(first.stdout);
    expect(again).toMatchObject({
      represents: operator.entry.id,
      return_code: 'R01',
      transfer_id: transfer.id,
      organization_id: other.organizationId,
      transaction_code: 27,
      amount_cents: 3500,
      presentments_again: 1,
    });
    // Once: a second run finds the new entry queued and changes nothing.
    await refused(`its entry ${again.entry_id} is queued`);
    expect((await entriesOfTransfer()).map((e) => [e.status, e.represents])).toEqual([
      ['returned', null],
      ['queued', operator.entry.id],
    ]);
    const exceptions = JSON.parse((await admin(['--json', 'ach', 'exceptions'], stack.config.DATABASE_URL)).stdout).exceptions;
    expect(exceptions.filter((x: { entry_id: string }) => x.entry_id === operator.entry.id)).toEqual([
      expect.objectContaining({ kind: 'transfer_returned', code: 'R01', presented_again_as: again.entry_id }),
    ]);
    expect(await operatorActions(otherCall, transfer.id)).toEqual([
      [operator.entry.trace_number, { action: 'presented_again', entry_id: again.entry_id, reference: null, at: expect.any(String) }],
    ]);

    // The next window files it, alone in a CCD batch the Rules' way (RETRY PYMT), and moov-io/ach reads the file.
    const built = (await buildWindowFile(stack.pool, stack.config, createLogger('silent'), `represent-${randomString(8)}`, new Date()))!;
    const moov = await readWithAchcli((await achFileBytes(stack.pool, stack.config, built.fileId))!);
    const { rows: filed } = await stack.pool.query<{ trace_number: string }>('SELECT trace_number FROM ach_entries WHERE id = $1', [
      again.entry_id,
    ]);
    const batch = moov.batches.find((b) => b.entryDetails.some((e) => e.traceNumber === filed[0]!.trace_number))!;
    expect(batch.batchHeader).toMatchObject({ standardEntryClassCode: 'CCD', companyEntryDescription: 'RETRY PYMT' });
    expect(batch.entryDetails.map((e) => [e.transactionCode, e.amount, e.DFIAccountNumber.trim()])).toEqual([[27, 3500, operator.number]]);
    expect((await otherCall('GET', `/transfer/${transfer.id}/ach`)).body).toMatchObject({
      trace_number: filed[0]!.trace_number,
      status: 'in_file',
      return: null,
    });
    // The bank settles it: the transfer, still pending, settles on the network's signal like a first entry.
    await markFileDelivered(stack.pool, built.fileId, new Date());
    await settleFile(stack.pool, stack.config.TEMPORAL_TASK_QUEUE, built.fileId, new Date());
    await eventually(
      async () => (await otherCall('GET', `/transfer/${transfer.id}`)).body.status === 'settled' || undefined,
      60_000,
      'the transfer settled',
    );

    // Returned again (after it settled): once more may be presented, then no more.
    await returnCcd('CCD-R01-again.ach', filed[0]!.trace_number);
    expect((await otherCall('GET', `/transfer/${transfer.id}`)).body).toMatchObject({ status: 'settled' });
    const second = await represent();
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ represents: again.entry_id, presentments_again: 2 });
    const third = JSON.parse(second.stdout).entry_id as string;
    const next = (await buildWindowFile(stack.pool, stack.config, createLogger('silent'), `represent-${randomString(8)}`, new Date()))!;
    await markFileDelivered(stack.pool, next.fileId, new Date());
    const { rows: thirdFiled } = await stack.pool.query<{ trace_number: string }>('SELECT trace_number FROM ach_entries WHERE id = $1', [
      third,
    ]);
    await returnCcd('CCD-R01-third.ach', thirdFiled[0]!.trace_number);
    await refused('presented again 2 times already, the most there may be (2)');
    expect(await entriesOfTransfer()).toHaveLength(3);
    // The database holds the same rule whoever writes: a fourth entry refused.
    await expect(
      stack.pool.query(
        `INSERT INTO ach_entries (organization_id, account_id, environment, transfer_id, sec_code, transaction_code, amount_cents, represents, created_at, updated_at)
         SELECT organization_id, account_id, environment, transfer_id, sec_code, transaction_code, amount_cents, id, now(), now() FROM ach_entries WHERE id = $1`,
        [third],
      ),
    ).rejects.toThrow(/presented again 2 times already/);
    expect(await journalViolations(stack.pool, [other.accountId])).toEqual([]);
  }, 240_000);

  test('a returned CCD entry whose money the operator moved outside ACH (ach transfer settled-outside): the pending transfer settles, the record stays, nothing is presented again; refused unless returned, once', async () => {
    const { other, otherCall, operator, transfer } = await sendCredits();
    const url = stack.config.DATABASE_URL;
    const REFERENCE = 'IMAD 20261128MMQFMP0X000123';
    const settledOutside = (reference = REFERENCE) =>
      // The worker's task queue: the CLI queues the network's signal for the drainer of this stack's queue.
      admin(['--json', 'ach', 'transfer', 'settled-outside', transfer.id, '--reference', reference], url, {
        TEMPORAL_TASK_QUEUE: stack.config.TEMPORAL_TASK_QUEUE,
      });
    const outsideRows = async () =>
      (
        await stack.pool.query('SELECT transfer_id, entry_id, reference FROM ach_transfer_settled_outside WHERE transfer_id = $1', [
          transfer.id,
        ])
      ).rows;
    // Its entry not returned: the ACH road is still open, so refused, nothing recorded.
    expectRefused(await settledOutside(), `its entry ${operator.entry.id} is delivered; only a transfer whose entry came back`);
    // A reference that is not 1–64 printable characters is a usage error (exit 2), before anything is read.
    for (const bad of [' IMAD', 'x'.repeat(65), 'caf\u00e9']) {
      const answer = await settledOutside(bad);
      expect([answer.code, JSON.parse(answer.stdout).error.code]).toEqual([2, 'usage']);
    }
    expect(await outsideRows()).toEqual([]);

    await returnTransferEntry('CCD-R01-outside.ach', operator.number, operator.entry.trace_number);
    expect((await otherCall('GET', `/transfer/${transfer.id}`)).body).toMatchObject({ status: 'pending' });
    // The API shows it waiting for the operator.
    expect(await operatorActions(otherCall, transfer.id)).toEqual([[operator.entry.trace_number, null]]);
    // Two operators at once: while a transaction holds the entry, the CLI's settled-outside and then a presentment
    // queue behind it. The first records; the second read the entry before that committed, so the database's guard
    // refuses its write, and it answers invalid_state like any refusal (it answered a bare check violation).
    const holder = await stack.pool.connect();
    let done: Awaited<ReturnType<typeof settledOutside>>;
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM ach_entries WHERE id = $1 FOR UPDATE', [operator.entry.id]);
      // Only the operators' actions wait here: lockLastEntry's query is the one that reads `settled_outside`.
      const waitingForEntry = async (count: number) => {
        const { rows } = await stack.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%AS settled_outside%FOR UPDATE OF e%'`,
        );
        return rows[0]?.n === count || undefined;
      };
      const outside = settledOutside();
      await eventually(() => waitingForEntry(1), 60_000, 'the CLI waiting for the entry');
      const presented = representTransfer(stack.pool, transfer.id, new Date()).then(
        () => 'presented',
        (error: unknown) => error,
      );
      await eventually(() => waitingForEntry(2), 30_000, 'the presentment waiting behind it');
      await holder.query('ROLLBACK');
      done = await outside;
      expect(await presented).toMatchObject({
        code: 'invalid_state',
        message: expect.stringContaining(`transfer ${transfer.id}: acted on meanwhile`),
      });
    } finally {
      holder.release();
    }
    expect(done.code).toBe(0);
    expect(JSON.parse(done.stdout)).toEqual({
      transfer_id: transfer.id,
      entry_id: operator.entry.id,
      return_code: 'R01',
      reference: REFERENCE,
      organization_id: other.organizationId,
      amount_cents: 3500,
      transfer_status: 'pending',
      settles: true,
    });
    // The pending transfer settles on the network's signal, queued with the record; the entry stays returned.
    await eventually(
      async () => (await otherCall('GET', `/transfer/${transfer.id}`)).body.status === 'settled' || undefined,
      60_000,
      'the transfer settled',
    );
    expect(await outsideRows()).toEqual([{ transfer_id: transfer.id, entry_id: operator.entry.id, reference: REFERENCE }]);
    const { rows: entries } = await stack.pool.query('SELECT id, status FROM ach_entries WHERE transfer_id = $1', [transfer.id]);
    expect(entries).toEqual([{ id: operator.entry.id, status: 'returned' }]);
    const exceptions = JSON.parse((await admin(['--json', 'ach', 'exceptions'], url)).stdout).exceptions;
    expect(exceptions.filter((x: { entry_id: string }) => x.entry_id === operator.entry.id)).toEqual([
      expect.objectContaining({ kind: 'transfer_returned', settled_outside: REFERENCE, presented_again_as: null }),
    ]);
    expect(await operatorActions(otherCall, transfer.id)).toEqual([
      [operator.entry.trace_number, { action: 'settled_outside', entry_id: null, reference: REFERENCE, at: expect.any(String) }],
    ]);

    // Once; and what was settled outside is not presented again, by the CLI or by any writer of the database.
    expectRefused(await settledOutside('ANOTHER'), `settled outside ACH already (reference ${REFERENCE})`);
    expectRefused(
      await admin(['--json', 'ach', 'transfer', 'represent', transfer.id], url),
      `settled outside ACH (reference ${REFERENCE}); nothing is presented again`,
    );
    await expect(
      stack.pool.query(
        `INSERT INTO ach_entries (organization_id, account_id, environment, transfer_id, sec_code, transaction_code, amount_cents, represents, created_at, updated_at)
         SELECT organization_id, account_id, environment, transfer_id, sec_code, transaction_code, amount_cents, id, now(), now() FROM ach_entries WHERE id = $1`,
        [operator.entry.id],
      ),
    ).rejects.toThrow(/settled outside ACH, nothing is presented again/);
    await expect(
      stack.pool.query(`UPDATE ach_transfer_settled_outside SET reference = 'CHANGED' WHERE transfer_id = $1`, [transfer.id]),
    ).rejects.toThrow(/is a record and does not change/);
    expect(await outsideRows()).toEqual([{ transfer_id: transfer.id, entry_id: operator.entry.id, reference: REFERENCE }]);
    expect(await journalViolations(stack.pool, [other.accountId])).toEqual([]);
  }, 240_000);

  test('GET /ach/return_rates answers from the kept counts; each threshold crossed emits ach.return_rate_exceeded once; the gauge shows them', async () => {
    const { rows: scan } = await stack.pool.query(
      `SELECT count(*)::int AS debits, count(r.id)::int AS overall, count(r.id) FILTER (WHERE r.code IN ('R05','R07','R10','R11','R29','R51'))::int AS unauthorized,
              count(r.id) FILTER (WHERE r.code IN ('R02','R03','R04'))::int AS administrative
         FROM ach_entries e LEFT JOIN ach_entry_returns r ON r.entry_id = e.id AND r.addenda_type = '99'
        WHERE e.organization_id = $1 AND e.transaction_code IN (27, 37)`,
      [org.organizationId],
    );
    const expected = scan[0];
    // Test 1 (4 debits, R01 R03 R10), test 2 (R01), test 3 (R02), test 4 (R01 twice) in this organization.
    expect(expected).toMatchObject({ unauthorized: 1, administrative: 2, overall: 7 });
    const answer = await call('GET', '/ach/return_rates');
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      window_days: 60,
      debits: expected.debits,
      unauthorized: { count: 1, rate: 1 / expected.debits, threshold: 0.005 },
      administrative: { count: 2, rate: 2 / expected.debits, threshold: 0.03 },
      overall: { count: 7, rate: 7 / expected.debits, threshold: 0.15 },
    });
    const { rows: events } = await stack.pool.query<{ data: { kind: string } }>(
      `SELECT data FROM events WHERE organization_id = $1 AND type = 'ach.return_rate_exceeded' ORDER BY seq`,
      [org.organizationId],
    );
    // All three were crossed by the first file; the later returns kept them over, which is no new crossing.
    expect(events.map((e) => e.data.kind).sort()).toEqual(['administrative', 'overall', 'unauthorized']);
    const metrics = await (await fetch(`${stack.url}/metrics`)).text();
    expect(metrics).toContain(`ledger_ach_return_rate{organization_id="${org.organizationId}",kind="overall"} ${7 / expected.debits}`);
  });

  test('every event these returns and corrections emitted fits the document’s schema for its type (GET /event)', async () => {
    const { departures } = await eventDepartures(stack.url);
    const events: { type: string }[] = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; body: { data: { type: string }[]; next_cursor: string | null } } = await call(
        'GET',
        `/event?limit=100${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(page.status).toBe(200);
      events.push(...page.body.data);
      cursor = page.body.next_cursor;
    } while (cursor);
    const types = new Set(events.map((event) => event.type));
    for (const type of ['ach_entry.returned', 'ach.return_rate_exceeded', 'bank_account.disabled', 'bank_account.updated'])
      expect(types).toContain(type);
    expect(events.flatMap(departures)).toEqual([]);
  });
});

describe('SPEC §25 sandbox: POST /simulate/ach/return returns a settled entry the way a bank file does', () => {
  let stack: Stack;
  let org: TestOrg;
  let call: Call;

  beforeAll(async () => {
    // A database of its own: its sandbox window would otherwise claim (and settle on its own clock) the queued
    // entries of every other suite on the shared database, and theirs these.
    stack = await startStack({
      ownDatabase: true,
      env: { SANDBOX_ACH_WINDOW_SECONDS: '1', SANDBOX_CONFIRM_SECONDS: '2', SANDBOX_RETURN_SECONDS: '1' },
    });
    org = await createTestOrg(stack.pool, { write: 5000, read: 5000 });
    call = apiClient(stack.url, org.apiKey);
    await ensureAchSchedule(stack.temporal, stack.config.TEMPORAL_TASK_QUEUE, stack.config);
    await ensureAchInboundSchedule(stack.temporal, stack.config.TEMPORAL_TASK_QUEUE, stack.config);
  });
  afterAll(async () => {
    await stack.temporal.schedule.getHandle(achScheduleId(stack.config.TEMPORAL_TASK_QUEUE)).delete();
    await stack.temporal.schedule.getHandle(achInboundScheduleId(stack.config.TEMPORAL_TASK_QUEUE)).delete();
    await stack.stop();
  });

  test('a settled deposit returned R07: dispute lost with its cash_out, user suspended; again is 409; an unsettled one is 409', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    const { intent } = await addBankAccount(call, userId, { account_number: accountNumber() }, 2600);
    const transactionId = intent.transactions[0].id as string;
    const early = await call('POST', '/simulate/ach/return', { transaction_id: transactionId, code: 'R07' }, idempotencyKey());
    expect(early.status).toBe(409);
    await statusOf(call, transactionId, 'available');
    await eventually(
      async () => {
        const { rows } = await stack.pool.query(`SELECT 1 FROM ach_entries WHERE transaction_id = $1 AND status = 'settled'`, [
          transactionId,
        ]);
        return rows[0];
      },
      30_000,
      'the entry settled',
    );

    const returned = await call('POST', '/simulate/ach/return', { transaction_id: transactionId, code: 'R07' }, idempotencyKey());
    expect(returned.status).toBe(200);
    expect(returned.body).toMatchObject({ transaction_id: transactionId, code: 'R07', reason: 'Authorization Revoked by Customer' });
    const dispute = await call('GET', `/dispute/${returned.body.dispute_id}`);
    expect(dispute.body).toMatchObject({
      intent_id: intent.id,
      code: 'R07',
      reason: 'Authorization Revoked by Customer',
      status: 'lost',
      amount: 2600,
    });
    expect(dispute.body.transactions.map((t: { direction: string; type: string }) => [t.direction, t.type])).toEqual([
      ['cash_out', 'dispute'],
    ]);
    expect((await call('GET', `/user/${userId}`)).body.status).toBe('suspended');
    expect((await call('POST', '/simulate/ach/return', { transaction_id: transactionId, code: 'R07' }, idempotencyKey())).status).toBe(409);
    const bad = await call('POST', '/simulate/ach/return', { transaction_id: transactionId, code: 'X1' }, idempotencyKey());
    expect(bad.status).toBe(400);
    expect(await journalViolations(stack.pool, [org.accountId])).toEqual([]);
  });
  test('the simulated bank returns an account number R03… after it settles, and corrects C01…; every other entry it leaves', async () => {
    const returnedUser = await createTestUser(stack.pool, org.organizationId);
    const changedUser = await createTestUser(stack.pool, org.organizationId);
    const r03 = await addBankAccount(call, returnedUser, { account_number: `R03${Date.now() % 1_000_000_000}` }, 1800);
    const c01 = await addBankAccount(call, changedUser, { account_number: `C01${Date.now() % 1_000_000_000}` }, 1900);
    const disputeOf = async (intentId: string) => {
      const { rows } = await stack.pool.query('SELECT code, status, amount_cents::int AS amount FROM disputes WHERE intent_id = $1', [
        intentId,
      ]);
      return rows[0];
    };
    expect(await eventually(() => disputeOf(r03.intent.id), 45_000, 'the R03 return')).toEqual({
      code: 'R03',
      status: 'lost',
      amount: 1800,
    });
    const { rows: account } = await stack.pool.query('SELECT status, disabled_reason FROM bank_accounts WHERE id = $1', [
      r03.bankAccountId,
    ]);
    expect(account[0]).toEqual({ status: 'disabled', disabled_reason: 'ACH return R03: No Account/Unable to Locate Account' });
    const updated = await eventually(
      async () => {
        const { rows } = await stack.pool.query(
          `SELECT data FROM events WHERE organization_id = $1 AND type = 'bank_account.updated' AND data->>'id' = $2`,
          [org.organizationId, c01.bankAccountId],
        );
        return rows[0]?.data;
      },
      45_000,
      'the C01 notification of change',
    );
    expect(updated).toMatchObject({ change_code: 'C01', status: 'active' });
    expect(await disputeOf(c01.intent.id)).toBeUndefined();
    expect(await journalViolations(stack.pool, [org.accountId])).toEqual([]);
  });
});
