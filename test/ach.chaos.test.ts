/**
 * SPEC §24 goal "nothing lost or sent twice": a production worker, in a process of its own, is SIGKILLed at
 * each step of an ACH window in turn (src/ach/steps.ts: inside the build's transaction, after the file is
 * stored, halfway through the upload, before the rename, after it, after the delivery is marked), and a
 * replacement worker finishes the window. Against the real OpenSSH server's directory and the database:
 * every entry is in exactly one delivered file, no file arrives twice or in part (no temporary name left),
 * each file validates with moov-io/ach's achcli and its entries are the ledger's rows.
 */
import fs from 'node:fs';
import path from 'node:path';
import { DateTime } from 'luxon';
import type { WorkflowHandle } from '@temporalio/client';
import { achFileBytes, buildWindowFile, markFileDelivered } from '../src/ach/files';
import { ACH_WINDOW_STEPS, type AchWindowStep } from '../src/ach/steps';
import { randomString } from '../src/ids';
import { SETTLEMENT_ZONE } from '../src/easternDates';
import { createLogger } from '../src/logger';
import { settlementTaskQueue } from '../src/settlement/contract';
import type { LedgerWorker } from '../src/worker';
import { readWithAchcli, type MoovEntry } from './support/achcli';
import { seedQueuedDeposits, PRODUCTION_ACH_ENV } from './support/achSeed';
import { bankFile } from './support/bankFiles';
import {
  apiClient,
  createTestOrg,
  createTestUser,
  eventually,
  startStack,
  startTestWorker,
  testInfra,
  type Stack,
  type TestOrg,
} from './support/harness';
import { addBankAccount } from './support/payments';
import { startSftpServer, type SftpServer } from './support/sftpServer';
import { spawnWorkerProcess, type WorkerProcess } from './support/spawnWorker';

/** Enough entries that the file is several 32 KiB upload chunks, so "halfway through the upload" is a real half. */
const ENTRIES_PER_WINDOW = 1_000;

/** One production window far from now on the Eastern clock, so the schedule never fires during the suite. */
function farWindow(): string {
  const hour = (DateTime.now().setZone(SETTLEMENT_ZONE).hour + 12) % 24;
  const hh = String(hour).padStart(2, '0');
  return `${hh}:00=${hh}:59`;
}

/** A worker process's environment: the stack's database, Temporal, task queue and keys, and `env`. */
function workerEnvOf(stack: Stack, env: Record<string, string>): Record<string, string> {
  return {
    ...env,
    DATABASE_URL: stack.config.DATABASE_URL!,
    TEMPORAL_ADDRESS: testInfra().temporalAddress,
    TEMPORAL_TASK_QUEUE: stack.config.TEMPORAL_TASK_QUEUE,
    LOG_LEVEL: 'silent',
    WEBHOOK_SECRET_KEY: stack.config.WEBHOOK_SECRET_KEY!,
    BANK_DATA_KEY: stack.config.BANK_DATA_KEY!,
  };
}

interface FileRow {
  id: string;
  file_name: string;
  status: string;
  entry_count: number;
}

interface LedgerEntry {
  transaction_id: string;
  file_id: string | null;
  status: string;
  trace_number: string | null;
  transaction_code: number;
  amount_cents: string;
  bank_account_id: string;
}

describe('SPEC §24 nothing lost or sent twice: a worker SIGKILLed at every step of an ACH window', () => {
  let server: SftpServer;
  let stack: Stack;
  let org: TestOrg;
  let workerEnv: Record<string, string>;
  let child: WorkerProcess | null = null;
  let replacement: LedgerWorker | null = null;
  const accountNumbers = new Map<string, string>();
  const deposits: string[] = [];
  const windows: Array<{ step: AchWindowStep; handle: WorkflowHandle }> = [];
  const outbound = () => path.join(server.root, 'outbound');

  beforeAll(async () => {
    server = await startSftpServer();
    const env = {
      ...PRODUCTION_ACH_ENV,
      ...server.achEnv(),
      ACH_WINDOWS: farWindow(),
    };
    // A database of its own: a window claims every queued production entry of its database.
    stack = await startStack({ worker: false, ownDatabase: true, env });
    workerEnv = workerEnvOf(stack, env);
    org = await createTestOrg(stack.pool, { environment: 'production', write: 5000, read: 5000 });
    await stack.pool.query(
      `INSERT INTO organization_ach (organization_id, company_id, company_name, updated_at) VALUES ($1, '1234567890', 'CHAOS COMPANY', now())`,
      [org.organizationId],
    );
    const call = apiClient(stack.url, org.apiKey);
    for (const [i, type] of (['checking', 'savings', 'checking'] as const).entries()) {
      const number = `${4_000_000 + i}${randomString(6).replace(/[^0-9]/g, '5')}`.slice(0, 12);
      const made = await addBankAccount(call, await createTestUser(stack.pool, org.organizationId), {
        account_number: number,
        account_type: type,
      });
      accountNumbers.set(made.bankAccountId, number);
      deposits.push(made.intent.transactions[0].id as string);
    }
  }, 120_000);

  afterAll(async () => {
    await child?.kill();
    await replacement?.shutdown();
    for (const { handle } of windows) await handle.terminate('test over: its settlement is hours away').catch(() => undefined);
    await stack.stop();
    await server.stop();
  });

  async function filesOf(workflowId: string): Promise<FileRow[]> {
    const { rows } = await stack.pool.query<FileRow>('SELECT id, file_name, status, entry_count FROM ach_files WHERE built_by = $1', [
      workflowId,
    ]);
    return rows;
  }

  async function entriesOf(transactionIds: readonly string[]): Promise<LedgerEntry[]> {
    const { rows } = await stack.pool.query<LedgerEntry>(
      `SELECT transaction_id, file_id, status, trace_number, transaction_code::int AS transaction_code, amount_cents::text, bank_account_id
         FROM ach_entries WHERE transaction_id = ANY($1::text[]) ORDER BY transaction_id`,
      [transactionIds],
    );
    return rows;
  }

  /** Resolves when the worker prints that it stopped at `step`. */
  function haltedAt(worker: WorkerProcess, step: AchWindowStep): Promise<void> {
    return new Promise((resolve) => {
      let seen = '';
      worker.child.stdout!.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        if (seen.includes(`halted at ${step}`)) resolve();
      });
    });
  }

  /** What the crash left on the bank's server and in the database: proof the worker died where the step says. */
  async function expectLeftAt(step: AchWindowStep, workflowId: string, queued: readonly string[]): Promise<void> {
    const files = await filesOf(workflowId);
    const names = fs.readdirSync(outbound());
    if (step === 'build') {
      // The build's transaction died with its connection: no file, every entry still queued.
      expect(files).toEqual([]);
      expect(new Set((await entriesOf(queued)).map((e) => e.status))).toEqual(new Set(['queued']));
      return;
    }
    expect(files).toHaveLength(1);
    const file = files[0]!;
    const size = (await achFileBytes(stack.pool, stack.config, file.id))!.length;
    // The temporary name is the attempt's own: `.<name>.<attempt>.part`.
    const temporaries = names.filter((name) => name.startsWith(`.${file.file_name}.`) && name.endsWith('.part'));
    const part = temporaries[0] ?? `.${file.file_name}.<none>.part`;
    const sizeOf = (name: string) => fs.statSync(path.join(outbound(), name)).size;
    switch (step) {
      case 'stored':
        expect(file.status).toBe('built');
        expect(names.filter((name) => name.includes(file.file_name))).toEqual([]);
        break;
      case 'upload':
        expect(temporaries).toHaveLength(1);
        expect(names).not.toContain(file.file_name);
        expect(sizeOf(part)).toBeLessThan(size);
        break;
      case 'rename':
        expect(temporaries).toHaveLength(1);
        expect(names).not.toContain(file.file_name);
        expect(sizeOf(part)).toBe(size);
        break;
      case 'renamed':
        expect(file.status).toBe('built');
        expect(names).toContain(file.file_name);
        expect(temporaries).toEqual([]);
        break;
      case 'marked':
        expect(file.status).toBe('delivered');
        expect(names).toContain(file.file_name);
        break;
    }
  }

  test.each(ACH_WINDOW_STEPS.map((step) => [step]))(
    'killed at %s: a replacement worker delivers the window file once, whole',
    async (step) => {
      const tag = `chaos${step}${randomString(6).replace(/[^A-Za-z0-9]/g, 'x')}`;
      const queued = await seedQueuedDeposits(stack.pool, {
        bankAccountIds: [...accountNumbers.keys()],
        count: ENTRIES_PER_WINDOW,
        tag,
        environment: 'production',
      });
      deposits.push(...queued);
      child = await spawnWorkerProcess({ ...workerEnv, LEDGER_TEST_ACH_HALT_AT: step }, 120_000);
      const halted = haltedAt(child, step);
      const workflowId = `ach-chaos-${tag}`;
      const handle = await stack.temporal.workflow.start('achWindowWorkflow', {
        taskQueue: settlementTaskQueue(stack.config.TEMPORAL_TASK_QUEUE),
        workflowId,
        args: [],
      });
      windows.push({ step, handle });
      await halted;
      await child.kill();
      child = null;
      await expectLeftAt(step, workflowId, queued);

      replacement = await startTestWorker(stack);
      const [file] = await eventually(
        async () => {
          const files = await filesOf(workflowId);
          return files[0]?.status === 'delivered' ? files : undefined;
        },
        120_000,
        `the window's file delivered after the kill at ${step}`,
      );
      await replacement.shutdown();
      replacement = null;
      // The run carries on to its settlement timer: killed, retried, not failed.
      expect((await handle.describe()).status.name).toBe('RUNNING');
      expect(await filesOf(workflowId)).toHaveLength(1);
      const entries = await entriesOf(queued);
      expect(entries).toHaveLength(ENTRIES_PER_WINDOW);
      expect(entries.every((e) => e.file_id === file!.id && e.status === 'delivered')).toBe(true);
      expect(fs.readdirSync(outbound()).filter((name) => name.startsWith('.'))).toEqual([]);
      expect(
        fs.readFileSync(path.join(outbound(), file!.file_name)).equals((await achFileBytes(stack.pool, stack.config, file!.id))!),
      ).toBe(true);
    },
    300_000,
  );

  /** The last failure of the run's pending activity, once it matches `pattern`. */
  function lastFailure(handle: WorkflowHandle, pattern: RegExp, what: string): Promise<string> {
    return eventually(
      async () => {
        const pending = (await handle.describe()).raw.pendingActivities ?? [];
        const message = pending[0]?.lastFailure?.message ?? '';
        return pattern.test(message) ? message : undefined;
      },
      90_000,
      what,
    );
  }

  test('a file built while ACH_SFTP_URL is not set, and retried while the bank is down, arrives once a worker has it and the bank is back', async () => {
    const tag = `late${randomString(8).replace(/[^A-Za-z0-9]/g, 'x')}`;
    const queued = await seedQueuedDeposits(stack.pool, {
      bankAccountIds: [...accountNumbers.keys()],
      count: 50,
      tag,
      environment: 'production',
    });
    deposits.push(...queued);
    const { ACH_SFTP_URL: _url, ACH_SFTP_KEY_FILE: _key, ACH_SFTP_HOST_KEY: _hostKey, ...unconfigured } = workerEnv;
    child = await spawnWorkerProcess(unconfigured, 120_000);
    const workflowId = `ach-late-${tag}`;
    const handle = await stack.temporal.workflow.start('achWindowWorkflow', {
      taskQueue: settlementTaskQueue(stack.config.TEMPORAL_TASK_QUEUE),
      workflowId,
      args: [],
    });
    windows.push({ step: 'marked', handle });
    await lastFailure(handle, /ACH_SFTP_URL is not set/, 'the delivery refused for want of ACH_SFTP_URL');
    const [built] = await filesOf(workflowId);
    expect(built).toMatchObject({ status: 'built', entry_count: 50 });
    expect(fs.readdirSync(outbound()).filter((name) => name.includes(built!.file_name))).toEqual([]);
    await child.kill();
    child = null;

    // The bank's server is down when a worker that has ACH_SFTP_URL takes over: retried, with backoff.
    server.kill();
    replacement = await startTestWorker(stack);
    await lastFailure(handle, /could not talk to the SFTP server|SFTP connection/, 'the delivery to a server that is down');
    expect((await filesOf(workflowId))[0]!.status).toBe('built');
    await server.start();
    const [file] = await eventually(
      async () => {
        const files = await filesOf(workflowId);
        return files[0]?.status === 'delivered' ? files : undefined;
      },
      120_000,
      'the late file delivered',
    );
    await replacement.shutdown();
    replacement = null;
    expect(file!.id).toBe(built!.id);
    expect((await handle.describe()).status.name).toBe('RUNNING');
    expect(fs.readdirSync(outbound()).filter((name) => name.includes(file!.file_name))).toEqual([file!.file_name]);
    expect(fs.readFileSync(path.join(outbound(), file!.file_name)).equals((await achFileBytes(stack.pool, stack.config, file!.id))!)).toBe(
      true,
    );
    expect((await entriesOf(queued)).every((e) => e.file_id === file!.id && e.status === 'delivered')).toBe(true);
  }, 300_000);

  test('across every window: each entry is in exactly one delivered file, and each file is the ledger rows achcli reads', async () => {
    const { rows: files } = await stack.pool.query<FileRow>(`SELECT id, file_name, status, entry_count FROM ach_files ORDER BY file_name`);
    expect(files.every((f) => f.status === 'delivered')).toBe(true);
    // The bank holds exactly the delivered files: none twice, none under a temporary name.
    expect(fs.readdirSync(outbound()).sort()).toEqual(files.map((f) => f.file_name).sort());

    const ledger = new Map((await entriesOf(deposits)).map((e) => [e.transaction_id, e]));
    expect(ledger.size).toBe(deposits.length);
    const seen = new Map<string, { entry: MoovEntry; fileId: string }[]>();
    for (const file of files) {
      const moov = await readWithAchcli(fs.readFileSync(path.join(outbound(), file.file_name)));
      const entries = moov.batches.flatMap((batch) => batch.entryDetails);
      expect(entries).toHaveLength(file.entry_count);
      for (const entry of entries) seen.set(entry.traceNumber, [...(seen.get(entry.traceNumber) ?? []), { entry, fileId: file.id }]);
    }
    for (const id of deposits) {
      const row = ledger.get(id)!;
      const copies = seen.get(row.trace_number!) ?? [];
      expect({ id, copies: copies.length }).toEqual({ id, copies: 1 });
      const [{ entry, fileId }] = copies as [{ entry: MoovEntry; fileId: string }];
      expect(fileId).toBe(row.file_id);
      expect({
        transactionCode: entry.transactionCode,
        amount: entry.amount,
        account: entry.DFIAccountNumber.trim(),
        identification: entry.identificationNumber.trim(),
      }).toEqual({
        transactionCode: row.transaction_code,
        amount: Number(row.amount_cents),
        account: accountNumbers.get(row.bank_account_id),
        identification: id.slice(-15),
      });
    }
    // Nothing in the files that is not a deposit of this suite.
    expect(seen.size).toBe(deposits.length);
  }, 120_000);
});

describe('SPEC §25 a poll of inbound/ whose worker is SIGKILLed mid-file moves on within seconds, and applies the file once', () => {
  let server: SftpServer;
  let stack: Stack;
  let child: WorkerProcess | null = null;
  let replacement: LedgerWorker | null = null;

  beforeAll(async () => {
    server = await startSftpServer();
    const env = { ...PRODUCTION_ACH_ENV, ...server.achEnv(), ACH_WINDOWS: farWindow() };
    // A database of its own: a window claims every queued production entry of its database.
    stack = await startStack({ worker: false, ownDatabase: true, env });
  }, 120_000);

  afterAll(async () => {
    await child?.kill();
    await replacement?.shutdown();
    await stack.stop();
    await server.stop();
  });

  test('the ingest dies with its worker; another worker retries it after the heartbeat timeout, not the 10-minute start-to-close', async () => {
    const org = await createTestOrg(stack.pool, { environment: 'production', write: 5000, read: 5000 });
    await stack.pool.query(
      `INSERT INTO organization_ach (organization_id, company_id, company_name, updated_at) VALUES ($1, '1234567890', 'CHAOS COMPANY', now())`,
      [org.organizationId],
    );
    const made = await addBankAccount(apiClient(stack.url, org.apiKey), await createTestUser(stack.pool, org.organizationId), {
      account_number: `5${randomString(8).replace(/[^0-9]/g, '4')}`,
    });
    const built = (await buildWindowFile(
      stack.pool,
      stack.config,
      createLogger('silent'),
      `inbound-chaos-${randomString(8)}`,
      new Date(),
    ))!;
    await markFileDelivered(stack.pool, built.fileId, new Date());
    const { rows } = await stack.pool.query<{ id: string; trace_number: string; amount_cents: string }>(
      'SELECT id, trace_number, amount_cents::text FROM ach_entries WHERE transaction_id = $1',
      [made.intent.transactions[0].id],
    );
    const entry = rows[0]!;
    server.writeFile(
      'inbound/KILLED.ach',
      await bankFile(PRODUCTION_ACH_ENV.ACH_ODFI_ROUTING, [{ trace: entry.trace_number, code: 'R01', amount: Number(entry.amount_cents) }]),
    );
    child = await spawnWorkerProcess(workerEnvOf(stack, { ...PRODUCTION_ACH_ENV, ...server.achEnv(), ACH_WINDOWS: farWindow() }), 120_000);
    // The entry held: the ingest, in the worker process, waits inside its transaction.
    const holder = await stack.pool.connect();
    let killedAt = 0;
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM ach_entries WHERE id = $1 FOR UPDATE', [entry.id]);
      const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const handle = await stack.temporal.workflow.start('achInboundWorkflow', {
        taskQueue: settlementTaskQueue(stack.config.TEMPORAL_TASK_QUEUE),
        workflowId: `ach-inbound-chaos-${randomString(8)}`,
        args: [],
      });
      await eventually(
        async () => {
          const { rows: waiting } = await stack.pool.query(
            `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND $1 = ANY(pg_blocking_pids(pid))`,
            [holderPid],
          );
          return waiting.length > 0 ? true : undefined;
        },
        60_000,
        'the ingest waiting on the entry',
      );
      await child.kill();
      child = null;
      killedAt = Date.now();
      await holder.query('ROLLBACK');
      replacement = await startTestWorker(stack);
      // Retried after the 15 s heartbeat timeout and a 5 s backoff, with room for a loaded box: well under the 10
      // minutes of its start-to-close timeout, which held the schedule's next polls back before (docs/reliability.md,
      // seed 20; this test timed out there).
      await eventually(
        async () => ((await handle.describe()).status.name === 'COMPLETED' ? true : undefined),
        150_000,
        'the poll finished by another worker within 150 s of the kill',
      );
      expect(await handle.result()).toEqual({ files: 1, ingested: 1, exceptions: 0, simulated: 0 });
    } finally {
      holder.release();
    }
    expect(Date.now() - killedAt).toBeLessThan(150_000);
    const { rows: applied } = await stack.pool.query('SELECT code FROM ach_entry_returns WHERE entry_id = $1', [entry.id]);
    expect(applied).toEqual([{ code: 'R01' }]);
    await replacement.shutdown();
    replacement = null;
  }, 300_000);
});
