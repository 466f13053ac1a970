import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { InvalidArgumentError } from 'commander';
import type { CommandRegistrar } from '../cli/registrar';
import type { Queryable } from '../db/pool';
import { withTemporalClient } from '../platform/temporal';
import { startWindowClose } from './client';
import { accountSettlementWorkflowId, settlementProgressQuery } from './workflowContract';
import { isCalendarDate } from './dates';
import * as repo from './repo';

/** CLI limits: how often progress is polled and printed, how many transfers the answer lists. */
const CLI_LIMITS = { pollMs: 1_000, transfersListedMax: 1_000, accountsMax: 100_000 };

function calendarDate(value: string): string {
  if (!isCalendarDate(value)) throw new InvalidArgumentError('must be a calendar date YYYY-MM-DD');
  return value;
}

function waitMode(value: string): WaitMode {
  if (value === 'none' || value === 'created' || value === 'settled') return value;
  throw new InvalidArgumentError('must be none, created or settled');
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type WaitMode = 'none' | 'created' | 'settled';
interface RunOptions {
  date: string;
  account?: string;
  org?: string;
  wait: WaitMode;
}
type Scope = { accountId: string | undefined; organizationId: string | undefined };

/**
 * `settlement run --date D [--account A] [--org O] [--wait none|created|settled]` (SPEC §13): closes window D
 * now, exactly as the schedule would, and by default waits until every transfer of the window is created,
 * printing progress (to stderr with --json, so stdout stays one JSON object).
 */
export const registerSettlementCommands: CommandRegistrar = (program, ctx) => {
  program
    .command('settlement')
    .description('settlement windows and transfers')
    .command('run')
    .description('close settlement window D now (as the daily schedule does at the cutoff)')
    .requiredOption('--date <date>', 'the window (YYYY-MM-DD, Eastern time)', calendarDate)
    .option('--account <id>', 'only this settlement account')
    .option('--org <id>', "only this organization's accounts")
    .option('--wait <mode>', 'none | created (every transfer built) | settled (every transfer settled, members told)', waitMode, 'created')
    .action(async (options: RunOptions) => {
      const { config, pool, out } = ctx();
      const json = Boolean(program.opts().json);
      const progress = (line: string) => (json ? process.stderr : process.stdout).write(`${line}\n`);
      const scope: Scope = { accountId: options.account, organizationId: options.org };
      const accounts = await accountsToFollow(pool, options, scope);
      await withTemporalClient(config, async (client) => {
        const started = await startWindowClose(client, config.TEMPORAL_TASK_QUEUE, {
          windowDate: options.date,
          ...(options.org ? { organizationId: options.org } : {}),
          ...(options.account ? { accountId: options.account } : {}),
        });
        progress(`window ${options.date}: closing for ${accounts.length} account(s) (workflow ${started.workflowId})`);
        if (options.wait !== 'none') {
          await client.workflow.getHandle(started.workflowId).result();
          await followAccounts({ client, pool, options, scope, accounts, progress });
        }
        const transfers = await repo.listTransfersOfWindow(pool, {
          windowDate: options.date,
          ...scope,
          limit: CLI_LIMITS.transfersListedMax,
        });
        out(
          transfers.length === 0
            ? `window ${options.date}: no transfers`
            : transfers
                .map((t) => `${t.id}  ${t.account_id}  ${t.direction} ${t.amount}  ${t.transaction_count} transactions  ${t.status}`)
                .join('\n'),
          { window_date: options.date, workflow_id: started.workflowId, accounts: accounts.length, transfers },
        );
      });
    });
};

/** The accounts this close will settle, known before it starts, so their workflows can be followed. */
async function accountsToFollow(pool: Queryable, options: RunOptions, scope: Scope): Promise<string[]> {
  if (options.account) {
    const { rows } = await pool.query(`SELECT 1 FROM accounts WHERE id = $1`, [options.account]);
    if (rows.length === 0) throw new Error(`no account ${options.account}`);
  }
  const accounts: string[] = [];
  for (let after: string | null = null; accounts.length < CLI_LIMITS.accountsMax;) {
    const page = await repo.accountsToSettle(pool, { windowDate: options.date, ...scope, afterAccountId: after, limit: 1_000 });
    accounts.push(...page);
    if (page.length < 1_000) break;
    after = page[page.length - 1]!;
  }
  // A named account is followed even when nothing is eligible any more (its window closed before).
  if (options.account && !accounts.includes(options.account)) accounts.push(options.account);
  return accounts;
}

/** Prints the window's progress whenever it changes until every account's settlement has reached `options.wait`. */
async function followAccounts(input: {
  client: Client;
  pool: Queryable;
  options: RunOptions;
  scope: Scope;
  accounts: string[];
  progress: (line: string) => void;
}): Promise<void> {
  const { client, pool, options, scope, accounts, progress } = input;
  let pending = new Set(accounts);
  let lastLine = '';
  for (;;) {
    for (const accountId of [...pending]) {
      if (await accountReached(client, accountId, options)) pending.delete(accountId);
    }
    const counts = await repo.windowProgress(pool, { windowDate: options.date, ...scope });
    const line =
      `window ${options.date}: ${counts.transfers} transfer(s) created (${counts.members} transactions), ` +
      `${counts.transfersSettled} settled (${counts.membersSettled}/${counts.members} transactions settled); ` +
      `${accounts.length - pending.size}/${accounts.length} account(s) ${options.wait}`;
    if (line !== lastLine) progress(line);
    lastLine = line;
    if (pending.size === 0) break;
    await sleep(CLI_LIMITS.pollMs);
    pending = new Set(pending);
  }
}

/** Whether the account's settlement of the window has reached `options.wait` (or has nothing to settle). */
async function accountReached(client: Client, accountId: string, options: RunOptions): Promise<boolean> {
  const handle = client.workflow.getHandle(accountSettlementWorkflowId(accountId, options.date));
  // The fan-out has finished: an account without a settlement workflow had nothing to settle.
  const described = await handle.describe().catch((error: unknown) => {
    if (error instanceof WorkflowNotFoundError) return null;
    throw error;
  });
  const state = described ? await handle.query(settlementProgressQuery).catch(() => null) : null;
  const passed = options.wait === 'created' ? state !== null && state.phase !== 'building' : state?.phase === 'done';
  return !described || described.status.name === 'COMPLETED' || passed;
}
