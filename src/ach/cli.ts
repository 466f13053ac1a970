import fs from 'node:fs';
import path from 'node:path';
import type { CommandRegistrar } from '../cli/registrar';
import type { Queryable } from '../db/pool';
import { randomString } from '../ids';
import { NotFoundError } from '../orgs/contract';
import { withTemporalClient } from '../platform/temporal';
import { settlementTaskQueue } from '../settlement/contract';
import { achFileBytes, getAchFile, type AchFileConfig, type AchFileRow } from './files';
import { ACH_WINDOW_WORKFLOW_TYPE } from './schedule';

/**
 * Operator commands of the ACH rail (SPEC §24): the files built, one file with its entries, the exact bytes
 * sent (opened from their seal, written to a file of mode 0600: they hold account numbers), and a window run
 * now, as the schedule does. Nothing here prints an account number.
 */

const CLI_LIMITS = { filesListedMax: 1_000, entriesShownMax: 10_000, windowWaitMs: 60_000, pollMs: 250 };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function fileJson(file: AchFileRow, effectiveDates: string[]) {
  return {
    id: file.id,
    file_name: file.file_name,
    window: file.window_time,
    file_date: file.file_date,
    effective_dates: effectiveDates,
    status: file.status,
    entry_count: file.entry_count,
    total_debit: file.total_debit_cents,
    total_credit: file.total_credit_cents,
    sha256: file.sha256,
    settle_at: file.settle_at.toISOString(),
    created_at: file.created_at.toISOString(),
    delivered_at: file.delivered_at?.toISOString() ?? null,
    settled_at: file.settled_at?.toISOString() ?? null,
  };
}

async function effectiveDatesOf(db: Queryable, fileIds: string[]): Promise<Map<string, string[]>> {
  const { rows } = await db.query<{ file_id: string; dates: string[] }>(
    `SELECT file_id, array_agg(DISTINCT to_char(effective_date, 'YYYY-MM-DD') ORDER BY to_char(effective_date, 'YYYY-MM-DD')) AS dates
       FROM ach_entries WHERE file_id = ANY($1::text[]) GROUP BY file_id`,
    [fileIds],
  );
  return new Map(rows.map((row) => [row.file_id, row.dates]));
}

async function listFiles(db: Queryable): Promise<ReturnType<typeof fileJson>[]> {
  const { rows } = await db.query<{ id: string }>('SELECT id FROM ach_files ORDER BY created_at DESC, id DESC LIMIT $1', [
    CLI_LIMITS.filesListedMax,
  ]);
  const dates = await effectiveDatesOf(
    db,
    rows.map((r) => r.id),
  );
  const files = await Promise.all(rows.map((r) => getAchFile(db, r.id)));
  return files.map((file) => fileJson(file!, dates.get(file!.id) ?? []));
}

const line = (f: ReturnType<typeof fileJson>) =>
  `${f.id} ${f.file_name} ${f.status} entries=${f.entry_count} debits=${f.total_debit} credits=${f.total_credit} effective=${f.effective_dates.join(',')} created=${f.created_at} delivered=${f.delivered_at ?? '-'}`;

/**
 * Writes the exact bytes of file `id` to `out`, made mode 0600 (they hold account numbers) and never over an
 * existing file; answers their length.
 */
async function downloadFile(db: Queryable, config: AchFileConfig, id: string, out: string): Promise<number> {
  const bytes = await achFileBytes(db, config, id);
  if (!bytes) throw new NotFoundError(`no ACH file ${id}`);
  fs.writeFileSync(out, bytes, { mode: 0o600, flag: 'wx' });
  return bytes.length;
}

export const registerAchCommands: CommandRegistrar = (program, ctx) => {
  const ach = program.command('ach').description('the ACH rail: files sent to the bank and the windows that build them');
  ach
    .command('files')
    .description(`every ACH file, newest first (at most ${CLI_LIMITS.filesListedMax})`)
    .option('--download <dir>', "also write each listed file's exact bytes to <dir>/<id>.ach (mode 0600, as `file download`)")
    .action(async (options: { download?: string }) => {
      const { config, pool, out: print } = ctx();
      const files = await listFiles(pool);
      if (options.download === undefined) {
        print(files.length === 0 ? 'no ACH files' : files.map(line).join('\n'), { files });
        return;
      }
      const written = [];
      for (const listed of files) {
        const out = path.join(options.download, `${listed.id}.ach`);
        written.push({ ...listed, path: out, bytes: await downloadFile(pool, config, listed.id, out) });
      }
      print(written.length === 0 ? 'no ACH files' : written.map((f) => `${line(f)} -> ${f.path}`).join('\n'), { files: written });
    });
  const file = ach.command('file').description('one ACH file');
  file
    .command('show <id>')
    .description('the file and its entries (trace numbers, payments, amounts; never an account number)')
    .action(async (id: string) => {
      const { pool, out } = ctx();
      const row = await getAchFile(pool, id);
      if (!row) throw new NotFoundError(`no ACH file ${id}`);
      const { rows: entries } = await pool.query(
        `SELECT id, trace_number, sec_code, transaction_code::int AS transaction_code, amount_cents::float8 AS amount, transaction_id,
                transfer_id, organization_id, status FROM ach_entries WHERE file_id = $1 ORDER BY trace_number LIMIT $2`,
        [id, CLI_LIMITS.entriesShownMax],
      );
      const shown = fileJson(row, (await effectiveDatesOf(pool, [id])).get(id) ?? []);
      out(
        [
          line(shown),
          ...entries.map(
            (e: Record<string, unknown>) =>
              `  ${String(e.trace_number)} ${String(e.sec_code)} ${String(e.transaction_code)} ${String(e.amount)} ${String(e.transaction_id ?? e.transfer_id)} ${String(e.status)}`,
          ),
        ].join('\n'),
        { file: shown, entries },
      );
    });
  file
    .command('download <id>')
    .description('write the exact bytes sent to the bank (they hold account numbers: the file is made mode 0600)')
    .requiredOption('--out <path>', 'where to write the file')
    .action(async (id: string, options: { out: string }) => {
      const { config, pool, out } = ctx();
      const bytes = await downloadFile(pool, config, id, options.out);
      out(`${id}: ${bytes} bytes written to ${options.out}`, { id, path: options.out, bytes });
    });
  registerWindowRun(ach, ctx);
};

/** `ach window run`: starts the window workflow now, as the schedule does, and waits until it has built its file (or found nothing). */
const registerWindowRun: CommandRegistrar = (ach, ctx) => {
  ach
    .command('window')
    .description('ACH windows')
    .command('run')
    .description('build a file now from every queued entry, deliver and settle it, as the schedule does')
    .action(async () => {
      const { config, pool, out } = ctx();
      await withTemporalClient(config, async (client) => {
        const workflowId = `ach-window-${config.TEMPORAL_TASK_QUEUE}-manual-${randomString(12)}`;
        const handle = await client.workflow.start(ACH_WINDOW_WORKFLOW_TYPE, {
          taskQueue: settlementTaskQueue(config.TEMPORAL_TASK_QUEUE),
          workflowId,
          args: [],
        });
        const deadline = Date.now() + CLI_LIMITS.windowWaitMs;
        for (;;) {
          const { rows } = await pool.query<{ id: string }>('SELECT id FROM ach_files WHERE built_by = $1', [workflowId]);
          if (rows[0]) {
            const built = fileJson(
              (await getAchFile(pool, rows[0].id))!,
              (await effectiveDatesOf(pool, [rows[0].id])).get(rows[0].id) ?? [],
            );
            out(`window ${workflowId}: built ${line(built)}`, { workflow_id: workflowId, file: built });
            return;
          }
          if ((await handle.describe()).status.name !== 'RUNNING') {
            out(`window ${workflowId}: nothing queued, no file`, { workflow_id: workflowId, file: null });
            return;
          }
          if (Date.now() > deadline)
            throw new Error(`window ${workflowId} built no file within ${CLI_LIMITS.windowWaitMs} ms (is a worker running?)`);
          await sleep(CLI_LIMITS.pollMs);
        }
      });
    });
};
