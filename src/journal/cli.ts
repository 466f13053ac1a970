import { InvalidArgumentError } from 'commander';
import type { CommandRegistrar } from '../cli/registrar';
import { NotFoundError } from '../orgs/contract';
import { statementSums, streamStatementCsv } from './repo';
import { statementQuery } from './schemas';
import { statementSpan } from './service';

/**
 * `account statement --account A --from D --to D [--csv]` (SPEC §21): the same statement as GET
 * /account/{id}/statement, for the operator (any organization's account), or with --csv its postings
 * streamed to stdout exactly as `?format=csv` answers them.
 */
export const registerJournalCommands: CommandRegistrar = (program, ctx) => {
  const account = program.commands.find((command) => command.name() === 'account') ?? program.command('account');
  account
    .command('statement')
    .description(
      "an account's statement: balances at the start of --from and the end of --to, totals per entry kind (--csv: every posting)",
    )
    .requiredOption('--account <id>', 'the account')
    .requiredOption('--from <date>', 'first settlement day (YYYY-MM-DD)')
    .requiredOption('--to <date>', 'last settlement day, included (at most 366 days in all)')
    .option('--csv', 'print every posting as CSV instead')
    .action(async (options: { account: string; from: string; to: string; csv?: boolean }) => {
      const parsed = statementQuery.safeParse({ from: options.from, to: options.to });
      if (!parsed.success) throw new InvalidArgumentError(parsed.error.issues.map((i) => `--${i.path.join('.')} ${i.message}`).join('; '));
      const { config, pool, out } = ctx();
      const { rows } = await pool.query(`SELECT 1 FROM accounts WHERE id = $1`, [options.account]);
      if (rows.length === 0) throw new NotFoundError(`no account ${options.account}`);
      const span = statementSpan(config.SETTLEMENT_CUTOFF, parsed.data);
      if (options.csv) {
        await streamStatementCsv(pool, options.account, span, process.stdout);
        return;
      }
      const sums = await statementSums(pool, options.account, span);
      const line = (b: { pending: number; available: number; in_transfer: number }) =>
        `pending ${b.pending}  available ${b.available}  in_transfer ${b.in_transfer}`;
      const ok = JSON.stringify(sums.derived) === JSON.stringify(sums.closing);
      out(
        [
          `${options.account}  ${options.from} to ${options.to}`,
          `opening  ${line(sums.opening)}`,
          ...Object.entries(sums.totals).map(([kind, t]) => `  ${kind.padEnd(18)} ${t.count} entries, ${t.amount} cents`),
          `closing  ${line(sums.closing)}${ok ? '' : `  MISMATCH: opening plus entries is ${line(sums.derived)}`}`,
        ].join('\n'),
        {
          account_id: options.account,
          from: options.from,
          to: options.to,
          opening: sums.opening,
          closing: sums.closing,
          totals: sums.totals,
          ok,
        },
      );
      if (!ok) process.exitCode = 1;
    });
};
