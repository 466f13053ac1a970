import fs from 'node:fs';
import path from 'node:path';
import { InvalidArgumentError } from 'commander';
import type { CommandRegistrar } from '../cli/registrar';
import { createLogger } from '../logger';
import { ingestInboundFile, INBOUND_LIMITS } from './inbound';
import { ACH_REPRESENT_MAX, representTransfer } from './represent';
import { outsideReferenceSchema, settleTransferOutside } from './settledOutside';

/**
 * `ach inbound import PATH`: ingests a return or notification-of-change file by hand, exactly as the SFTP poll
 * does (SPEC §25): a file seen before changes nothing. `ach exceptions`: what could not be applied, newest first.
 * `ach transfer represent TRANSFER` and `ach transfer settled-outside TRANSFER --reference REF`: the operator's
 * actions on a returned CCD entry (src/ach/represent.ts, src/ach/settledOutside.ts).
 */
export const CLI_EXCEPTIONS_MAX = 200;

export const registerAchReturnCommands: CommandRegistrar = (program, ctx) => {
  const ach = program.commands.find((command) => command.name() === 'ach') ?? program.command('ach').description('the ACH rail');
  ach
    .command('inbound')
    .description("the bank's return and notification-of-change files")
    .command('import')
    .description('ingest one return or notification-of-change file (once: the same bytes again change nothing)')
    .argument('<path>', 'the file')
    .action(async (file: string) => {
      const { config, pool, out } = ctx();
      const stat = fs.statSync(file);
      if (!stat.isFile() || stat.size > INBOUND_LIMITS.fileBytesMax)
        throw new Error(`${file}: not a file of at most ${INBOUND_LIMITS.fileBytesMax} bytes`);
      const deps = { config, pool, log: createLogger(config.LOG_LEVEL), services: { taskQueue: config.TEMPORAL_TASK_QUEUE } };
      const result = await ingestInboundFile(deps, {
        fileName: path.basename(file),
        bytes: fs.readFileSync(file),
        source: 'cli',
        now: new Date(),
      });
      const f = result.file;
      out(
        result.outcome === 'already_ingested'
          ? `${f.id}: these bytes were ingested on ${f.received_at} as ${f.file_name}; nothing changed`
          : `${f.id} ${f.status}: ${f.entry_count} entries, ${f.returns_count} returns, ${f.changes_count} changes, ${f.exceptions_count} exceptions, ${f.duplicates_count} already applied`,
        result,
      );
    });
  ach
    .command('exceptions')
    .description(
      `what the bank sent that was not applied (unknown trace, unparseable file, returned transfer, …), newest ${CLI_EXCEPTIONS_MAX}`,
    )
    .action(async () => {
      const { pool, out } = ctx();
      const { rows } = await pool.query<{
        id: string;
        kind: string;
        file_name: string;
        line: number;
        trace_number: string | null;
        code: string | null;
        detail: string;
        presented_again_as: string | null;
        settled_outside: string | null;
        created_at: Date;
      }>(
        `SELECT x.id, x.kind, f.file_name, x.line, x.trace_number, x.code, x.entry_id, x.organization_id, x.detail,
                (SELECT again.id FROM ach_entries again WHERE again.represents = x.entry_id AND x.kind = 'transfer_returned') AS presented_again_as,
                (SELECT o.reference FROM ach_transfer_settled_outside o WHERE o.entry_id = x.entry_id AND x.kind = 'transfer_returned') AS settled_outside,
                x.created_at
           FROM ach_exceptions x JOIN ach_inbound_files f ON f.id = x.inbound_file_id
          ORDER BY x.created_at DESC, x.id DESC LIMIT $1`,
        [CLI_EXCEPTIONS_MAX],
      );
      const lines = rows.map(
        (x) =>
          `${x.created_at.toISOString()} ${x.kind} ${x.file_name}:${x.line} ${x.code ?? ''} ${x.trace_number ?? ''} ${x.detail}` +
          (x.presented_again_as ? ` (presented again as ${x.presented_again_as})` : '') +
          (x.settled_outside ? ` (settled outside ACH, reference ${x.settled_outside})` : ''),
      );
      out(lines.length ? lines.join('\n') : 'no exceptions', { exceptions: rows });
    });
  const transfer = ach.command('transfer').description("a transfer's CCD entry on the operator's bank account");
  transfer
    .command('represent')
    .description(
      `present a transfer whose CCD entry the bank returned again, in the next window's file (at most ${ACH_REPRESENT_MAX} times; fix the reason first)`,
    )
    .argument('<transfer_id>', 'the transfer')
    .action(async (transferId: string) => {
      const { pool, out } = ctx();
      const represented = await representTransfer(pool, transferId, new Date());
      out(
        `${represented.transfer_id}: ${represented.entry_id} queued for the next ACH window (${represented.amount_cents} cents, ` +
          `transaction code ${represented.transaction_code}), presenting again ${represented.represents} (returned ${represented.return_code}); ` +
          `presentment again ${represented.presentments_again} of at most ${ACH_REPRESENT_MAX}`,
        represented,
      );
    });
  transfer
    .command('settled-outside')
    .description(
      'record that the money of a transfer whose CCD entry the bank returned moved outside ACH (a wire, a book transfer); a pending transfer settles',
    )
    .argument('<transfer_id>', 'the transfer')
    .requiredOption('--reference <text>', "the outside payment's reference (a wire's IMAD, the bank's confirmation)", (value: string) => {
      const parsed = outsideReferenceSchema.safeParse(value);
      if (!parsed.success) throw new InvalidArgumentError(parsed.error.issues.map((issue) => issue.message).join('; '));
      return parsed.data;
    })
    .action(async (transferId: string, options: { reference: string }) => {
      const { config, pool, out } = ctx();
      const done = await settleTransferOutside(pool, config.TEMPORAL_TASK_QUEUE, transferId, options.reference, new Date());
      out(
        `${done.transfer_id}: settled outside ACH (reference ${done.reference}), its entry ${done.entry_id} returned ${done.return_code}; ` +
          (done.settles ? 'the pending transfer settles once its workflow takes the signal' : `the transfer stays ${done.transfer_status}`),
        done,
      );
    });
};
