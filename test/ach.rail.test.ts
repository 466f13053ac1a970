/**
 * SPEC §24 the ACH rail end to end, on real Postgres and Temporal: a cash_in with a bank account is a PPD debit
 * queued with its transaction, filed by an ACH window, delivered (sandbox: the simulated bank, or an SFTP server
 * when one is configured; production: a real OpenSSH SFTP server), settled, and only then `available`. The stored file is read back by moov-io/ach's
 * achcli and its entries equal the ledger's rows; the database refuses an entry in two files and any change to
 * a built file.
 */
import { PRODUCTION_ACH_ENV } from './support/achSeed';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DateTime } from 'luxon';
import { achFileBytes, buildWindowFile, getAchFile } from '../src/ach/files';
import { FILE_ID_MODIFIERS } from '../src/ach/nacha';
import { achScheduleId, ensureAchSchedule } from '../src/ach/schedule';
import { deliveredFileSettlesAt, fileTimingOf, isAchBusinessDay } from '../src/ach/timing';
import { loadConfig } from '../src/config';
import { randomString } from '../src/ids';
import { createLogger } from '../src/logger';
import { SandboxRail } from '../src/rails';
import { settlementTaskQueue } from '../src/settlement/workflowContract';
import { readWithAchcli } from './support/achcli';
import { apiClient, createTestOrg, createTestUser, eventually, startStack, type Stack, type TestOrg } from './support/harness';
import { addBankAccount, SANDBOX_ROUTING, statusOf } from './support/payments';
import { runAdmin } from './support/processes';
import { giveOperatorBankAccount } from './support/bankReturns';
import { startSftpServer, type SftpServer } from './support/sftpServer';

type Call = ReturnType<typeof apiClient>;

// Always 17 digits, the field's width (the tests compare achcli's field with it): the clock's last 8 digits
// zero-padded, since for 2.8 hours in every 27.8 they are fewer than 8 (stop 43's CI met such a window).
const accountNumber = () => `9${randomString(8).replace(/[^0-9]/g, '7')}${String(Date.now() % 100_000_000).padStart(8, '0')}`;

interface EntryRow {
  id: string;
  status: string;
  file_id: string | null;
  trace_number: string | null;
  transaction_code: number;
  amount_cents: string;
  sec_code: string;
  effective_date: string | null;
  settled_at: Date | null;
}

async function entryOf(stack: Stack, transactionId: string): Promise<EntryRow | undefined> {
  const { rows } = await stack.pool.query<EntryRow>(
    `SELECT id, status, file_id, trace_number, transaction_code, amount_cents::text, sec_code,
            to_char(effective_date, 'YYYY-MM-DD') AS effective_date, settled_at
       FROM ach_entries WHERE transaction_id = $1`,
    [transactionId],
  );
  return rows[0];
}

/** The file's bytes as achcli reads them, and the entry with `traceNumber`. */
async function entryInFile(stack: Stack, fileId: string, traceNumber: string) {
  const bytes = (await achFileBytes(stack.pool, stack.config, fileId))!;
  const moov = await readWithAchcli(bytes.toString('latin1'));
  const entries = moov.batches.flatMap((batch) => batch.entryDetails.map((entry) => ({ batch, entry })));
  return { bytes, moov, found: entries.filter(({ entry }) => entry.traceNumber === traceNumber) };
}

describe('SPEC §24 sandbox: a deposit with a bank account goes through the ACH window to the simulated bank', () => {
  let stack: Stack;
  let org: TestOrg;
  let call: Call;

  beforeAll(async () => {
    // A database of its own: a sandbox window claims every queued sandbox entry of its database, and another
    // suite's window (its own SANDBOX_CONFIRM_SECONDS) would settle this suite's entries on its own clock.
    stack = await startStack({ ownDatabase: true, env: { SANDBOX_ACH_WINDOW_SECONDS: '1', SANDBOX_CONFIRM_SECONDS: '3' } });
    org = await createTestOrg(stack.pool, { write: 5000, read: 5000 });
    call = apiClient(stack.url, org.apiKey);
    await ensureAchSchedule(stack.temporal, stack.config.TEMPORAL_TASK_QUEUE, stack.config);
  });
  afterAll(async () => {
    await stack.temporal.schedule.getHandle(achScheduleId(stack.config.TEMPORAL_TASK_QUEUE)).delete();
    await stack.stop();
  });

  test('pending → in a file → delivered → settled → available, and the file achcli reads holds the ledger row', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    const number = accountNumber();
    const { intent } = await addBankAccount(call, userId, { account_number: number, account_type: 'savings' }, 4321);
    const transactionId = intent.transactions[0].id as string;
    // Queued in the transaction that recorded the deposit: there from the first answer.
    const queued = await entryOf(stack, transactionId);
    expect(queued).toMatchObject({ sec_code: 'PPD', transaction_code: 37, amount_cents: '4321' });

    const available = await statusOf(call, transactionId, 'available');
    const entry = (await entryOf(stack, transactionId))!;
    expect(entry).toMatchObject({
      status: 'settled',
      file_id: expect.stringMatching(/^achf_/),
      trace_number: expect.stringMatching(/^\d{15}$/),
    });
    const file = (await getAchFile(stack.pool, entry.file_id!))!;
    expect(file).toMatchObject({ status: 'settled' });
    expect(file.created_at.getTime()).toBeLessThanOrEqual(file.delivered_at!.getTime());
    expect(file.delivered_at!.getTime()).toBeLessThanOrEqual(file.settled_at!.getTime());
    // The deposit became available only when its debit settled, SANDBOX_CONFIRM_SECONDS after it was recorded.
    const { rows: history } = await stack.pool.query<{ to_status: string; changed_at: Date }>(
      'SELECT to_status, changed_at FROM transaction_status_history WHERE transaction_id = $1 ORDER BY id',
      [transactionId],
    );
    expect(history.map((h) => h.to_status)).toEqual(['pending', 'available']);
    expect(history[1]!.changed_at.getTime()).toBeGreaterThanOrEqual(file.settled_at!.getTime());
    expect(history[1]!.changed_at.getTime() - history[0]!.changed_at.getTime()).toBeGreaterThanOrEqual(3_000);
    expect(available.status).toBe('available');
    const ach = await call('GET', `/transaction/${transactionId}/ach`);
    expect(ach.status).toBe(200);
    expect(ach.body).toEqual({
      trace_number: entry.trace_number,
      sec_code: 'PPD',
      transaction_code: 37,
      amount: 4321,
      effective_date: entry.effective_date,
      file_id: file.id,
      status: 'settled',
      return: null,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(ach.text).not.toContain(number);

    const { bytes, moov, found } = await entryInFile(stack, file.id, entry.trace_number!);
    expect(bytes.length % 95).toBe(0);
    expect(found).toHaveLength(1);
    const [{ entry: moovEntry, batch }] = found as [(typeof found)[number]];
    expect(moovEntry).toMatchObject({
      transactionCode: 37,
      RDFIIdentification: SANDBOX_ROUTING.slice(0, 8),
      checkDigit: SANDBOX_ROUTING.slice(8),
      DFIAccountNumber: number.padEnd(17, ' '),
      amount: 4321,
    });
    expect(batch.batchHeader).toMatchObject({ standardEntryClassCode: 'PPD' });
    expect(moov.fileControl).toMatchObject({ entryAddendaCount: file.entry_count, totalDebit: file.total_debit_cents });
  });
  test('a cash_out to a bank account is a PPD credit queued when its transfer is created, and is filed', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    await addBankAccount(call, userId, { account_number: accountNumber() }, 100);
    const out = await call(
      'POST',
      '/intent',
      { direction: 'cash_out', user_id: userId, amount: 700, currency: 'USD' },
      { 'X-Idempotency-Key': `k-${randomString(16)}` },
    );
    expect(out.body).toMatchObject({ status: 'approved', bank_account_id: expect.stringMatching(/^ba_/) });
    const cashOutId = out.body.transactions[0].id as string;
    expect(await entryOf(stack, cashOutId)).toBeUndefined();
    const closed = await call('POST', '/simulate/settlement', {}, { 'X-Idempotency-Key': `k-${randomString(16)}` });
    expect(closed.status).toBe(200);
    await statusOf(call, cashOutId, 'in_transfer');
    const filed = await eventually(
      async () => {
        const row = await entryOf(stack, cashOutId);
        return row && row.status !== 'queued' ? row : undefined;
      },
      30_000,
      'the cash_out credit filed',
    );
    expect(filed).toMatchObject({ sec_code: 'PPD', transaction_code: 22, amount_cents: '700' });
  });
});

interface TransferRow {
  id: string;
  amount_cents: string;
  direction: string;
  status: string;
  created_at: Date;
  settled_at: Date | null;
}

async function transferOf(stack: Stack, accountId: string): Promise<TransferRow | undefined> {
  const { rows } = await stack.pool.query<TransferRow>(
    `SELECT id, amount_cents::text, direction, status, created_at, settled_at FROM transfers WHERE account_id = $1`,
    [accountId],
  );
  return rows[0];
}

async function transferEntryOf(stack: Stack, transferId: string): Promise<(EntryRow & { environment: string }) | undefined> {
  const { rows } = await stack.pool.query<EntryRow & { environment: string }>(
    `SELECT id, status, file_id, trace_number, transaction_code, amount_cents::text, sec_code, environment,
            to_char(effective_date, 'YYYY-MM-DD') AS effective_date, settled_at
       FROM ach_entries WHERE transfer_id = $1`,
    [transferId],
  );
  return rows[0];
}

describe('SPEC §24 sandbox: a transfer is a CCD entry on the operator bank account, settled by the ACH window', () => {
  const SETTLE_SECONDS = 4;
  let stack: Stack;

  beforeAll(async () => {
    // A database of its own, as above: the transfer's entry must settle on this suite's SANDBOX_SETTLE_SECONDS.
    stack = await startStack({
      ownDatabase: true,
      env: { SANDBOX_ACH_WINDOW_SECONDS: '1', SANDBOX_CONFIRM_SECONDS: '1', SANDBOX_SETTLE_SECONDS: String(SETTLE_SECONDS) },
    });
    await ensureAchSchedule(stack.temporal, stack.config.TEMPORAL_TASK_QUEUE, stack.config);
  });
  afterAll(async () => {
    await stack.temporal.schedule.getHandle(achScheduleId(stack.config.TEMPORAL_TASK_QUEUE)).delete();
    await stack.stop();
  });

  /** An org whose window holds an available deposit of `inCents` and a cash_out of `outCents`, then closed. */
  async function closedWindow(inCents: number, outCents: number, operator: { number: string } | null) {
    const org = await createTestOrg(stack.pool, { write: 5000, read: 5000 });
    const call = apiClient(stack.url, org.apiKey);
    if (operator) {
      expect(await giveOperatorBankAccount(stack, org.accountId, operator.number)).not.toBeNull();
    }
    const userId = await createTestUser(stack.pool, org.organizationId);
    const { intent } = await addBankAccount(call, userId, { account_number: accountNumber() }, inCents);
    await statusOf(call, intent.transactions[0].id as string, 'available');
    const out = await call(
      'POST',
      '/intent',
      { direction: 'cash_out', user_id: userId, amount: outCents, currency: 'USD' },
      { 'X-Idempotency-Key': `k-${randomString(16)}` },
    );
    expect(out.body).toMatchObject({ status: 'approved' });
    const closed = await call('POST', '/simulate/settlement', {}, { 'X-Idempotency-Key': `k-${randomString(16)}` });
    expect(closed.status).toBe(200);
    const transfer = await eventually(() => transferOf(stack, org.accountId), 30_000, 'the transfer');
    return { org, call, transfer, cashOutId: out.body.transactions[0].id as string };
  }

  test('a disbursement is a CCD credit to the operator account in the file; the transfer settles only when it does', async () => {
    const number = accountNumber();
    const { org, call, transfer } = await closedWindow(5000, 700, { number });
    expect(transfer).toMatchObject({ amount_cents: '4300', direction: 'disbursement' });
    // Queued in the statement that built the transfer.
    expect(await transferEntryOf(stack, transfer.id)).toMatchObject({
      sec_code: 'CCD',
      transaction_code: 22,
      amount_cents: '4300',
      environment: 'sandbox',
    });
    const settled = await eventually(
      async () => {
        const row = await transferOf(stack, org.accountId);
        return row?.status === 'settled' ? row : undefined;
      },
      30_000,
      'the transfer settled',
    );
    const entry = (await transferEntryOf(stack, transfer.id))!;
    expect(entry).toMatchObject({ status: 'settled', file_id: expect.stringMatching(/^achf_/) });
    // The rail waited for the network: the entry settled first, SANDBOX_SETTLE_SECONDS after the transfer was created.
    expect(settled.settled_at!.getTime()).toBeGreaterThanOrEqual(entry.settled_at!.getTime());
    expect(entry.settled_at!.getTime() - transfer.created_at.getTime()).toBeGreaterThanOrEqual(SETTLE_SECONDS * 1000);

    const ach = await call('GET', `/transfer/${transfer.id}/ach`);
    expect(ach.status).toBe(200);
    expect(ach.body).toMatchObject({
      trace_number: entry.trace_number,
      sec_code: 'CCD',
      transaction_code: 22,
      amount: 4300,
      status: 'settled',
    });
    expect(ach.text).not.toContain(number);

    const { moov, found } = await entryInFile(stack, entry.file_id!, entry.trace_number!);
    expect(found).toHaveLength(1);
    const [{ entry: moovEntry, batch }] = found as [(typeof found)[number]];
    expect(batch.batchHeader).toMatchObject({ standardEntryClassCode: 'CCD' });
    expect(moovEntry).toMatchObject({
      transactionCode: 22,
      RDFIIdentification: SANDBOX_ROUTING.slice(0, 8),
      checkDigit: SANDBOX_ROUTING.slice(8),
      DFIAccountNumber: number.padEnd(17, ' '),
      amount: 4300,
    });
    expect(moov.fileControl.entryAddendaCount).toBeGreaterThanOrEqual(1);
  });

  test('a 0 transfer makes no entry; a transfer without an operator bank account has none and settles as before', async () => {
    const zero = await closedWindow(900, 900, { number: accountNumber() });
    expect(zero.transfer).toMatchObject({ amount_cents: '0' });
    await statusOf(zero.call, zero.cashOutId, 'settled');
    expect(await transferEntryOf(stack, zero.transfer.id)).toBeUndefined();
    expect((await zero.call('GET', `/transfer/${zero.transfer.id}/ach`)).status).toBe(404);

    const none = await closedWindow(3000, 1000, null);
    expect(none.transfer).toMatchObject({ amount_cents: '2000', direction: 'disbursement' });
    expect(await transferEntryOf(stack, none.transfer.id)).toBeUndefined();
    // The sandbox rail's answer: its timer for a transfer without an entry, the ACH window's signal for one with.
    const rail = new SandboxRail(1, SETTLE_SECONDS);
    const transfer = { transferId: none.transfer.id, accountId: none.org.accountId, direction: 'disbursement' as const, amountCents: 2000 };
    expect(await rail.submitTransfer({ ...transfer, achEntry: false })).toEqual({ kind: 'after_seconds', seconds: SETTLE_SECONDS });
    expect(await rail.submitTransfer({ ...transfer, achEntry: true })).toEqual({ kind: 'signal' });
    // Its settlement date may be a later business day (the timer starts at hand-off): the network's early
    // settlement, as before, settles it and its members.
    const settle = await none.call(
      'POST',
      `/simulate/transfer/${none.transfer.id}/settle`,
      {},
      { 'X-Idempotency-Key': `k-${randomString(16)}` },
    );
    expect(settle.status).toBeLessThan(300);
    await statusOf(none.call, none.cashOutId, 'settled');
    expect(await transferEntryOf(stack, none.transfer.id)).toBeUndefined();
  });
});

describe('SPEC §24 an entry is in at most one file, and a built file never changes (the database)', () => {
  let stack: Stack;
  let org: TestOrg;
  let call: Call;
  const log = createLogger('silent');

  beforeAll(async () => {
    stack = await startStack({ worker: false });
    org = await createTestOrg(stack.pool, { write: 5000, read: 5000 });
    call = apiClient(stack.url, org.apiKey);
  });
  afterAll(async () => {
    await stack.stop();
  });

  async function queuedDeposit(): Promise<string> {
    const userId = await createTestUser(stack.pool, org.organizationId);
    const { intent } = await addBankAccount(call, userId, { account_number: accountNumber() }, 250);
    return intent.transactions[0].id as string;
  }

  test('two builds at once file each entry once; a second claim, a move to another file or a change to a file is refused', async () => {
    const deposits = await Promise.all([queuedDeposit(), queuedDeposit(), queuedDeposit()]);
    const [first, second] = await Promise.all([
      buildWindowFile(stack.pool, stack.config, log, `test-${randomString(8)}`, new Date()),
      buildWindowFile(stack.pool, stack.config, log, `test-${randomString(8)}`, new Date()),
    ]);
    const entries = await Promise.all(deposits.map((id) => entryOf(stack, id)));
    const files = new Set(entries.map((e) => e!.file_id));
    expect(entries.every((e) => e!.status === 'in_file')).toBe(true);
    expect([first, second].filter((f) => f !== null).map((f) => f.fileId)).toEqual(expect.arrayContaining([...files]));
    // Nothing left to claim: a third build makes no file.
    expect(await buildWindowFile(stack.pool, stack.config, log, `test-${randomString(8)}`, new Date())).toBeNull();

    const moved = entries[0]!;
    const other = await queuedDeposit();
    const otherFile = await buildWindowFile(stack.pool, stack.config, log, `test-${randomString(8)}`, new Date());
    expect(otherFile).not.toBeNull();
    await expect(stack.pool.query('UPDATE ach_entries SET file_id = $2 WHERE id = $1', [moved.id, otherFile!.fileId])).rejects.toThrow(
      /at most one file/,
    );
    await expect(stack.pool.query(`UPDATE ach_entries SET trace_number = '000000000000001' WHERE id = $1`, [moved.id])).rejects.toThrow(
      /at most one file/,
    );
    await expect(
      stack.pool.query('UPDATE ach_files SET total_debit_cents = total_debit_cents + 1 WHERE id = $1', [moved.file_id]),
    ).rejects.toThrow(/never changes/);
    await expect(stack.pool.query(`UPDATE ach_files SET bytes_sealed = 'gcm1:AAAA' WHERE id = $1`, [moved.file_id])).rejects.toThrow(
      /never changes/,
    );
    await expect(stack.pool.query('DELETE FROM ach_files WHERE id = $1', [moved.file_id])).rejects.toThrow(/never deleted/);

    // A queued entry cannot join a file already built: the file's count and totals would no longer be its bytes'.
    const late = await queuedDeposit();
    const lateEntry = (await entryOf(stack, late))!;
    await expect(
      stack.pool.query(
        `UPDATE ach_entries SET file_id = $2, status = 'in_file', trace_number = '999999999999999', effective_date = current_date WHERE id = $1`,
        [lateEntry.id, otherFile!.fileId],
      ),
    ).rejects.toThrow(/built with 1 entries/);
    expect(await entryOf(stack, late)).toMatchObject({ status: 'queued', file_id: null });
    expect((await entryOf(stack, other))!.file_id).toBe(otherFile!.fileId);
  });

  test("a sandbox builds past the day's 36 File ID Modifiers, taking them again in turns; production is refused a second turn", async () => {
    // Issue 38: the simulated bank builds a file every SANDBOX_ACH_WINDOW_SECONDS, and a seeded simulation ran out of
    // the day's 36 modifiers in three minutes; every bank-account payment after that stayed pending for the day.
    const built: Array<{ fileId: string; fileName: string }> = [];
    let fileDate: string | null = null;
    const turnsOf = async () =>
      (
        await stack.pool.query<{ turn: number }>(`SELECT DISTINCT modifier_turn AS turn FROM ach_files WHERE file_date = $1::date`, [
          fileDate,
        ])
      ).rows.map((row) => row.turn);
    // Other suites share this database's day: build until this one has filed into a second turn (at most 37 files).
    for (let i = 0; i < 37 && !(fileDate !== null && (await turnsOf()).includes(1)); i += 1) {
      await queuedDeposit();
      const file = await buildWindowFile(stack.pool, stack.config, log, `test-${randomString(8)}`, new Date());
      expect(file).not.toBeNull();
      built.push(file!);
      fileDate ??= (await getAchFile(stack.pool, file!.fileId))!.file_date;
    }
    const { rows } = await stack.pool.query<{
      id: string;
      file_id_modifier: string;
      modifier_turn: number;
      file_name: string;
      environment: string;
    }>(`SELECT id, file_id_modifier, modifier_turn, file_name, environment FROM ach_files WHERE file_date = $1::date ORDER BY created_at`, [
      fileDate,
    ]);
    const firstTurn = rows.filter((row) => row.modifier_turn === 0);
    const secondTurn = rows.filter((row) => row.modifier_turn === 1);
    expect(firstTurn.map((row) => row.file_id_modifier).sort()).toEqual([...FILE_ID_MODIFIERS].sort());
    expect(secondTurn.length).toBeGreaterThan(0);
    expect(secondTurn[0]).toMatchObject({ file_id_modifier: 'A', environment: 'sandbox' });
    expect(secondTurn[0]!.file_name).toMatch(/^ACH-\d{8}-\d{4}-A-1\.ach$/);
    // The later turn's file is as valid a NACHA file as any (achcli reads it back).
    const last = built[built.length - 1]!;
    expect((await readWithAchcli((await achFileBytes(stack.pool, stack.config, last.fileId))!)).fileHeader.fileIDModifier).toBe(
      rows[rows.length - 1]!.file_id_modifier,
    );

    // The database keeps production to one turn, and a built file's turn to what it was built with.
    await expect(stack.pool.query(`UPDATE ach_files SET modifier_turn = 2 WHERE id = $1`, [secondTurn[0]!.id])).rejects.toThrow(
      /never changes/,
    );
    await expect(
      stack.pool.query(
        `INSERT INTO ach_files (built_by, file_name, file_date, file_id_modifier, bytes_sealed, sha256, entry_count, total_debit_cents,
                                total_credit_cents, settle_at, created_at, environment, modifier_turn)
         VALUES ($1, $1, $2::date, 'B', 'gcm1:AAAA', repeat('0', 64), 1, 1, 0, now(), now(), 'production', 1)`,
        [`test-${randomString(8)}`, fileDate],
      ),
    ).rejects.toThrow(/ach_files_modifier_turn_check/);
  }, 120_000);
});

describe('SPEC §24 trace numbers come round after 9,999,999, skipping those an entry that can still be returned holds', () => {
  let stack: Stack;
  let org: TestOrg;
  let call: Call;
  const log = createLogger('silent');

  beforeAll(async () => {
    // A database of its own: the suite moves ach_trace_sequence to its edge.
    stack = await startStack({ worker: false, ownDatabase: true });
    org = await createTestOrg(stack.pool, { write: 5000, read: 5000 });
    call = apiClient(stack.url, org.apiKey);
  });
  afterAll(async () => {
    await stack.stop();
  });

  async function queuedDeposit(): Promise<string> {
    const userId = await createTestUser(stack.pool, org.organizationId);
    const { intent } = await addBankAccount(call, userId, { account_number: accountNumber() }, 300);
    return intent.transactions[0].id as string;
  }
  const build = () => buildWindowFile(stack.pool, stack.config, log, `test-${randomString(8)}`, new Date());

  test('9999998, 9999999, then 0000001 and on, past a number still held; the database refuses a held one', async () => {
    const odfi8 = '01100001';
    await stack.pool.query(`SELECT setval('ach_trace_sequence', 2, false)`);
    const early = await queuedDeposit();
    expect(await build()).not.toBeNull();
    const held = (await entryOf(stack, early))!.trace_number;
    expect(held).toBe(`${odfi8}0000002`);

    await stack.pool.query(`SELECT setval('ach_trace_sequence', 9999998, false)`);
    const deposits: string[] = [];
    for (let i = 0; i < 4; i += 1) deposits.push(await queuedDeposit());
    const file = (await build())!;
    const entries = await Promise.all(deposits.map(async (id) => (await entryOf(stack, id))!));
    // Claimed oldest first; 0000002 is skipped: its entry can still be returned, and a return names it by trace alone.
    expect(entries.map((e) => e.trace_number)).toEqual([`${odfi8}9999998`, `${odfi8}9999999`, `${odfi8}0000001`, `${odfi8}0000003`]);
    expect(new Set(entries.map((e) => e.file_id))).toEqual(new Set([file.fileId]));
    const bytes = (await achFileBytes(stack.pool, stack.config, file.fileId))!;
    const moov = await readWithAchcli(bytes.toString('latin1'));
    expect(moov.batches.flatMap((b) => b.entryDetails.map((e) => e.traceNumber)).sort()).toEqual(entries.map((e) => e.trace_number).sort());

    // Anything but the build giving a held trace number is refused by the database (migrations/0044).
    const lateDeposit = await queuedDeposit();
    const late = (await entryOf(stack, lateDeposit))!;
    await expect(
      stack.pool.query(
        `UPDATE ach_entries SET trace_number = $2, file_id = $3, status = 'in_file', effective_date = current_date WHERE id = $1`,
        [late.id, held, file.fileId],
      ),
    ).rejects.toThrow(/can still be returned/);
    expect(await entryOf(stack, lateDeposit)).toMatchObject({ status: 'queued', file_id: null, trace_number: null });
  });
});

describe('SPEC §24 entries follow from their payments in the same database transaction', () => {
  let stack: Stack;
  let org: TestOrg;
  let call: Call;

  beforeAll(async () => {
    stack = await startStack({ worker: false });
    org = await createTestOrg(stack.pool, { write: 5000, read: 5000 });
    call = apiClient(stack.url, org.apiKey);
  });
  afterAll(async () => {
    await stack.stop();
  });

  test('a refund of a deposit from a bank account is a PPD credit to it; an intent without one makes no entry', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    const { intent } = await addBankAccount(call, userId, { account_number: accountNumber(), account_type: 'savings' }, 800);
    const refund = await call('POST', '/refund', { intent_id: intent.id, amount: 300 }, { 'X-Idempotency-Key': `k-${randomString(16)}` });
    expect(refund.status).toBe(200);
    expect(await entryOf(stack, refund.body.transaction.id as string)).toMatchObject({
      sec_code: 'PPD',
      transaction_code: 32,
      amount_cents: '300',
      status: 'queued',
    });
    const plainUser = await createTestUser(stack.pool, org.organizationId);
    const plain = await call(
      'POST',
      '/intent',
      { direction: 'cash_in', user_id: plainUser, amount: 100, currency: 'USD' },
      { 'X-Idempotency-Key': `k-${randomString(16)}` },
    );
    expect(plain.body).toMatchObject({ status: 'approved', bank_account_id: null });
    expect(await entryOf(stack, plain.body.transactions[0].id as string)).toBeUndefined();
    const none = await call('GET', `/transaction/${plain.body.transactions[0].id as string}/ach`);
    expect(none).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    expect((await call('GET', '/transfer/transfer_nonexistent000000000/ach')).status).toBe(404);
    // Another organization's transaction is not found, exactly like an unknown one.
    const stranger = await createTestOrg(stack.pool);
    const strangerCall = apiClient(stack.url, stranger.apiKey);
    expect((await strangerCall('GET', `/transaction/${refund.body.transaction.id as string}/ach`)).status).toBe(404);
    expect((await call('GET', `/transaction/${refund.body.transaction.id as string}/ach`)).body).toMatchObject({
      status: 'queued',
      trace_number: null,
      file_id: null,
    });
  });
});

describe('SPEC §24 production: the window delivers its file to the bank over SFTP, whole, once', () => {
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
      },
    });
    org = await createTestOrg(stack.pool, { environment: 'production', write: 5000, read: 5000 });
    call = apiClient(stack.url, org.apiKey);
    await stack.pool.query(
      `INSERT INTO organization_ach (organization_id, company_id, company_name, updated_at) VALUES ($1, '1234567890', 'TEST COMPANY', now())`,
      [org.organizationId],
    );
  });
  afterAll(async () => {
    await stack.stop();
    await server.stop();
  });

  test('the file lands in outbound/ under its name with the stored bytes; a second window sends nothing', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    const number = accountNumber();
    const { intent } = await addBankAccount(call, userId, { account_number: number }, 1999);
    const transactionId = intent.transactions[0].id as string;
    const run = (id: string) =>
      stack.temporal.workflow.start('achWindowWorkflow', {
        taskQueue: settlementTaskQueue(stack.config.TEMPORAL_TASK_QUEUE),
        workflowId: id,
        args: [],
      });
    const handle = await run(`ach-window-test-${randomString(8)}`);
    const entry = await eventually(
      async () => {
        const row = await entryOf(stack, transactionId);
        return row?.status === 'delivered' ? row : undefined;
      },
      30_000,
      'the entry delivered',
    );
    const file = (await getAchFile(stack.pool, entry.file_id!))!;
    expect(file.status).toBe('delivered');
    const outbound = fs.readdirSync(path.join(server.root, 'outbound'));
    expect(outbound).toEqual([file.file_name]);
    const sent = fs.readFileSync(path.join(server.root, 'outbound', file.file_name));
    expect(sent.equals((await achFileBytes(stack.pool, stack.config, file.id))!)).toBe(true);
    const { found } = await entryInFile(stack, file.id, entry.trace_number!);
    expect(entry.trace_number!.slice(0, 8)).toBe('09100001');
    expect(found.map((f) => [f.entry.transactionCode, f.entry.amount, f.entry.DFIAccountNumber.trim()])).toEqual([[27, 1999, number]]);
    expect(found[0]!.batch.batchHeader).toMatchObject({ companyIdentification: '1234567890', companyName: 'TEST COMPANY' });
    // Production confirms only when the bank settles the entry: the deposit is still pending.
    expect((await call('GET', `/transaction/${transactionId}`)).body.status).toBe('pending');

    const again = await run(`ach-window-test-${randomString(8)}`);
    expect(await again.result()).toEqual({ fileId: null, status: 'none' });
    expect(fs.readdirSync(path.join(server.root, 'outbound'))).toEqual([file.file_name]);

    const metrics = await (await fetch(`${stack.url}/metrics`)).text();
    expect(metrics).toMatch(/^ledger_ach_delivery_configured 1$/m);
    expect(Number(/^ledger_ach_files\{status="delivered"\} (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(1);
    expect(((await (await fetch(`${stack.url}/readyz`)).json()) as { checks: Record<string, string> }).checks.ach_delivery).toBeUndefined();

    // The operator's CLI: the file listed, shown without account numbers, and downloaded byte for byte.
    const env = {
      DATABASE_URL: stack.config.DATABASE_URL!,
      LEDGER_ENVIRONMENT: 'production',
      WEBHOOK_SECRET_KEY: stack.config.WEBHOOK_SECRET_KEY!,
      BANK_DATA_KEY: stack.config.BANK_DATA_KEY!,
    };
    const listed = await runAdmin(['ach', 'files', '--json'], env);
    expect(listed.code).toBe(0);
    expect(listed.json.files).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          id: file.id,
          file_name: file.file_name,
          status: 'delivered',
          entry_count: file.entry_count,
          total_debit: file.total_debit_cents,
        }),
      ]),
    );
    const shown = await runAdmin(['ach', 'file', 'show', file.id, '--json'], env);
    expect(shown.json.entries).toEqual(
      expect.arrayContaining([expect.objectContaining({ trace_number: entry.trace_number, amount: 1999, transaction_id: transactionId })]),
    );
    expect(shown.stdout).not.toContain(number);
    expect(listed.stdout).not.toContain(number);
    const downloaded = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ach-download-')), 'file.ach');
    expect((await runAdmin(['ach', 'file', 'download', file.id, '--out', downloaded, '--json'], env)).code).toBe(0);
    expect(fs.readFileSync(downloaded).equals(sent)).toBe(true);
    expect(fs.statSync(downloaded).mode & 0o777).toBe(0o600);
    // Every listed file downloaded by one command (the simulation's check reads them all so).
    const everyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ach-download-all-'));
    const every = await runAdmin(['ach', 'files', '--download', everyDir, '--json'], env);
    expect(every.code).toBe(0);
    const everyFile = every.json.files as Array<{ id: string; path: string; bytes: number }>;
    expect(fs.readdirSync(everyDir).sort()).toEqual(everyFile.map((f) => `${f.id}.ach`).sort());
    const mine = everyFile.find((f) => f.id === file.id)!;
    expect(mine).toMatchObject({ path: path.join(everyDir, `${file.id}.ach`), bytes: sent.length });
    expect(fs.readFileSync(mine.path).equals(sent)).toBe(true);
    expect(fs.statSync(mine.path).mode & 0o777).toBe(0o600);
    expect(every.stdout).not.toContain(number);

    // `ach window run` builds a file now, as the schedule does, through the worker.
    const later = await addBankAccount(
      call,
      await createTestUser(stack.pool, org.organizationId),
      { account_number: accountNumber() },
      555,
    );
    const windowEnv = { ...env, TEMPORAL_ADDRESS: stack.config.TEMPORAL_ADDRESS!, TEMPORAL_TASK_QUEUE: stack.config.TEMPORAL_TASK_QUEUE };
    const ran = await runAdmin(['ach', 'window', 'run', '--json'], windowEnv);
    expect(ran.code).toBe(0);
    expect(ran.json.file).toMatchObject({ entry_count: 1, total_debit: 555, status: expect.stringMatching(/^(built|delivered)$/) });
    expect((await entryOf(stack, later.intent.transactions[0].id as string))!.file_id).toBe(ran.json.file.id);
    await eventually(
      async () => (fs.readdirSync(path.join(server.root, 'outbound')).length === 2 ? true : undefined),
      30_000,
      'the second file delivered',
    );
    await stack.temporal.workflow.getHandle(ran.json.workflow_id as string).terminate('test over');
    await handle.terminate('test over: its settlement timer is hours away');
    // Six CLI processes and three windows: 54 s alone on the shared 2-core box (with five).
  }, 180_000);
});

describe('SPEC §24 sandbox with ACH_SFTP_URL: its files go to that server instead of the simulated bank', () => {
  let stack: Stack;
  let org: TestOrg;
  let call: Call;
  let server: SftpServer;

  beforeAll(async () => {
    server = await startSftpServer();
    // A database of its own, as the sandbox suite above: its window claims every queued sandbox entry.
    stack = await startStack({
      ownDatabase: true,
      env: {
        SANDBOX_ACH_WINDOW_SECONDS: '1',
        SANDBOX_CONFIRM_SECONDS: '2',
        ...server.achEnv(),
      },
    });
    org = await createTestOrg(stack.pool, { write: 5000, read: 5000 });
    call = apiClient(stack.url, org.apiKey);
    await ensureAchSchedule(stack.temporal, stack.config.TEMPORAL_TASK_QUEUE, stack.config);
  });
  afterAll(async () => {
    await stack.temporal.schedule.getHandle(achScheduleId(stack.config.TEMPORAL_TASK_QUEUE)).delete();
    await stack.stop();
    await server.stop();
  });

  test('a deposit is filed, delivered to outbound/ byte for byte, settled on the sandbox clock, then available', async () => {
    const number = accountNumber();
    const { intent } = await addBankAccount(call, await createTestUser(stack.pool, org.organizationId), { account_number: number }, 2468);
    const transactionId = intent.transactions[0].id as string;
    expect((await statusOf(call, transactionId, 'available')).status).toBe('available');
    const entry = (await entryOf(stack, transactionId))!;
    expect(entry.status).toBe('settled');
    const file = (await getAchFile(stack.pool, entry.file_id!))!;
    const sent = fs.readFileSync(path.join(server.root, 'outbound', file.file_name));
    expect(sent.equals((await achFileBytes(stack.pool, stack.config, file.id))!)).toBe(true);
    const moov = await readWithAchcli(sent.toString('latin1'));
    const entries = moov.batches.flatMap((batch) => batch.entryDetails);
    expect(
      entries.filter((e) => e.traceNumber === entry.trace_number).map((e) => [e.transactionCode, e.amount, e.DFIAccountNumber.trim()]),
    ).toEqual([[27, 2468, number]]);
    // No temporary name is left beside the delivered files.
    expect(fs.readdirSync(path.join(server.root, 'outbound')).filter((name) => name.startsWith('.'))).toEqual([]);
    const metrics = await (await fetch(`${stack.url}/metrics`)).text();
    expect(metrics).toMatch(/^ledger_ach_delivery_configured 1$/m);
  }, 120_000);
});

describe('SPEC §24 production without ACH_SFTP_URL: files are built and kept, and /readyz and a gauge say so', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await startStack({ worker: false, env: { LEDGER_ENVIRONMENT: 'production' } });
  });
  afterAll(async () => {
    await stack.stop();
  });

  test('/readyz names undelivered ACH without failing; the gauges read the rail', async () => {
    const ready = await fetch(`${stack.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(((await ready.json()) as { checks: Record<string, string> }).checks.ach_delivery).toMatch(/ACH_SFTP_URL is not set/);
    const metrics = await (await fetch(`${stack.url}/metrics`)).text();
    expect(metrics).toMatch(/^ledger_ach_delivery_configured 0$/m);
    expect(metrics).toMatch(/^ledger_ach_entries_queued \d+$/m);
    expect(metrics).toMatch(/^ledger_ach_files\{status="built"\} \d+$/m);
    expect(metrics).toMatch(/^ledger_ach_oldest_undelivered_file_age_seconds [\d.e+-]+$/m);
  });
});

describe('SPEC §24 window timing (Eastern clock, §15 calendar)', () => {
  const config = { ACH_WINDOWS: loadConfig({}).ACH_WINDOWS, SETTLEMENT_CALENDAR: 'federal_reserve' as const };
  const eastern = (iso: string) => DateTime.fromISO(iso, { zone: 'America/New_York' }).toJSDate();

  test('a same-day window settles at its FedACH time; after the last settlement, a weekend or a holiday, the next business day at 08:30', () => {
    // Wednesday 2026-11-25, the 14:45 window: effective that day, settles 17:00 Eastern.
    expect(fileTimingOf(eastern('2026-11-25T14:46'), config)).toEqual({
      fileDate: '2026-11-25',
      creationTime: '14:46',
      windowTime: '14:45',
      effectiveDate: '2026-11-25',
      settleAt: eastern('2026-11-25T17:00'),
    });
    // The same Wednesday after 18:00: Thursday is Thanksgiving, so Friday 08:30.
    expect(fileTimingOf(eastern('2026-11-25T18:30'), config)).toMatchObject({
      effectiveDate: '2026-11-27',
      settleAt: eastern('2026-11-27T08:30'),
    });
    // Saturday: Monday 08:30.
    expect(fileTimingOf(eastern('2026-11-28T10:30'), config)).toMatchObject({
      windowTime: '10:30',
      effectiveDate: '2026-11-30',
      settleAt: eastern('2026-11-30T08:30'),
    });
    // Before the first window (an operator's run) the file makes the first window's settlement.
    expect(fileTimingOf(eastern('2026-11-30T07:00'), config)).toMatchObject({
      windowTime: null,
      effectiveDate: '2026-11-30',
      settleAt: eastern('2026-11-30T13:00'),
    });
    expect(isAchBusinessDay(eastern('2026-11-26T10:30'), config)).toBe(false);
    expect(isAchBusinessDay(eastern('2026-11-27T10:30'), config)).toBe(true);
  });

  test('a file that reached the bank late settles with the window its delivery makes, never before it was built for', () => {
    const builtFor = eastern('2026-11-25T13:00');
    // Delivered within its window: its own settlement.
    expect(deliveredFileSettlesAt({ settle_at: builtFor, delivered_at: eastern('2026-11-25T10:31') }, config)).toEqual(builtFor);
    // The bank's server was down until 13:30, past the 10:30 window's settlement: as a file built then, the
    // next business day at 08:30 (Thursday is Thanksgiving). Later than the bank may settle it, never earlier.
    expect(deliveredFileSettlesAt({ settle_at: builtFor, delivered_at: eastern('2026-11-25T13:30') }, config)).toEqual(
      eastern('2026-11-27T08:30'),
    );
    // ACH_SFTP_URL was set only on Saturday: Monday 08:30.
    expect(deliveredFileSettlesAt({ settle_at: builtFor, delivered_at: eastern('2026-11-28T09:00') }, config)).toEqual(
      eastern('2026-11-30T08:30'),
    );
  });
});
