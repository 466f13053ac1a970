import type { CommandRegistrar } from '../cli/registrar';
import { withTemporalClient } from '../platform/temporal';
import { NotFoundError } from '../orgs/contract';
import { createLogger } from '../logger';
import { drainLifecycleQueueOnce } from './lifecycleDrainer';
import { awaitingWorkflowSince } from './lifecycleQueue';
import { journalViolations } from '../journal/contract';
import { journalChecks } from '../journal/contract';
import { listAccounts, recomputeBalances, type Balances } from './accounts';
import { getIntent } from './intents';
import { getTransactionRow, statusHistory } from './transactions';
import { rowOf } from '../assert';
import { withTransaction } from '../db/pool';

/**
 * Operator commands for the ledger: inspect a transaction with its status history, an intent, an
 * organization's balances, and start any workflow a crashed api left unstarted.
 */
export const registerLedgerCommands: CommandRegistrar = (program, ctx) => {
  const transaction = program.command('transaction').description('ledger transactions');
  transaction
    .command('show')
    .argument('<transaction_id>')
    .description('a transaction with its status history')
    .action(async (transactionId: string) => {
      const { pool, out } = ctx();
      const row = await getTransactionRow(pool, transactionId);
      if (!row) throw new NotFoundError(`no transaction ${transactionId}`);
      const history = await statusHistory(pool, transactionId);
      const awaitingSince = await awaitingWorkflowSince(pool, transactionId);
      const txn = row.json;
      out(
        [
          `${txn.id}  ${txn.direction} ${txn.amount} cents ${txn.currency}  ${txn.status}  (org ${row.organization_id}, account ${txn.account_id})`,
          `type ${txn.type}  source ${txn.source_id ?? '-'}  date ${txn.date}  transfer ${row.transfer_id ?? '-'}`,
          `workflow ${awaitingSince ? `NOT STARTED (awaiting since ${awaitingSince.toISOString()})` : 'started'}`,
          ...history.map(
            (h) =>
              `  ${h.changed_at.toISOString()}  ${h.from_status ?? '(recorded)'} → ${h.to_status}${h.transfer_id ? `  ${h.transfer_id}` : ''}`,
          ),
        ].join('\n'),
        {
          transaction: txn,
          organization_id: row.organization_id,
          transfer_id: row.transfer_id,
          workflow_started: awaitingSince === null,
          history: history.map((h) => ({ ...h, changed_at: h.changed_at.toISOString() })),
        },
      );
    });
  transaction
    .command('reconcile')
    .description(
      'drain the queues to Temporal now: start every queued workflow, deliver every queued confirmation and command (the workers do this continuously)',
    )
    .action(async () => {
      const { config, pool, out } = ctx();
      await withTemporalClient(config, async (client) => {
        const deps = { pool, client, taskQueue: config.TEMPORAL_TASK_QUEUE, log: createLogger('warn', 'admin') };
        let started = 0;
        for (;;) {
          const pass = await drainLifecycleQueueOnce(deps);
          started += pass.started;
          if (pass.failed > 0) throw new Error(`Temporal refused ${pass.failed} call(s); they stay queued`);
          // Until a pass finds nothing due: a workflow's next command is due only once the one before it is delivered.
          if (pass.claimed === 0) break;
        }
        out(`started ${started} workflow(s)`, { started });
      });
    });

  program
    .command('intent')
    .description('payment intents')
    .command('show')
    .argument('<intent_id>')
    .description('an intent with its transactions')
    .action(async (intentId: string) => {
      const { pool, out } = ctx();
      const { rows } = await pool.query<{ organization_id: string }>(`SELECT organization_id FROM intents WHERE id = $1`, [intentId]);
      const intent = rows[0] ? await getIntent(pool, rows[0].organization_id, intentId) : null;
      if (!intent) throw new NotFoundError(`no intent ${intentId}`);
      out(
        [
          `${intent.id}  ${intent.direction} ${intent.amount} cents  ${intent.status}${intent.decline_category ? ` (${intent.decline_category})` : ''}  user ${intent.user_id}`,
          ...intent.transactions.map((t) => `  ${t.id}  ${t.status}  date ${t.date}`),
        ].join('\n'),
        { intent, organization_id: rowOf(rows, 'the intent was found by this row').organization_id },
      );
    });

  // `account create` belongs to the organizations' registrar; balances are the ledger's.
  const account = program.commands.find((command) => command.name() === 'account') ?? program.command('account');
  account
    .command('balances')
    .requiredOption('--org <id>')
    .description("an organization's accounts with pending / available / in_transfer (cents)")
    .action(async (options: { org: string }) => {
      const { pool, out } = ctx();
      const page = await listAccounts(pool, options.org, { limit: 100 });
      out(
        page.data
          .map(
            (a) =>
              `${a.id}  ${a.name}  pending ${a.balances.pending}  available ${a.balances.available}  in_transfer ${a.balances.in_transfer}`,
          )
          .join('\n') || '(no accounts)',
        { organization_id: options.org, accounts: page.data },
      );
    });
  account
    .command('verify')
    .requiredOption('--org <id>')
    .description('prove every cached balance equals the sums of the journal and what the transactions imply (exit 1 on a mismatch)')
    .action(async (options: { org: string }) => {
      const { pool, out } = ctx();
      // One snapshot for every read: a transition that commits between the cache's read and the transactions'
      // would otherwise show as a mismatch that is not there (a fresh-clone CI run's returns suite saw one).
      const { checks, problems } = await withTransaction(
        pool,
        async (db) => {
          const journal = await journalChecks(db, options.org);
          const checks = [];
          for (const c of journal) {
            const recomputed = await recomputeBalances(db, c.account_id);
            const same = (b: Balances) =>
              b.pending === c.cache.pending && b.available === c.cache.available && b.in_transfer === c.cache.in_transfer;
            checks.push({
              account_id: c.account_id,
              ok: same(c.journal) && same(recomputed),
              cache: c.cache,
              journal: c.journal,
              recomputed,
            });
          }
          // The journal's own invariants too: entries that sum to zero, one per transition, snapshots equal to their sums.
          const problems = (
            await journalViolations(
              db,
              journal.map((c) => c.account_id),
            )
          ).map((row) => row.problem);
          return { checks, problems };
        },
        { snapshot: true },
      );
      const ok = checks.every((c) => c.ok) && problems.length === 0;
      out(
        [
          ...checks.map(
            (c) =>
              `${c.account_id}  ${c.ok ? 'ok' : `MISMATCH cache ${JSON.stringify(c.cache)} journal ${JSON.stringify(c.journal)} transactions ${JSON.stringify(c.recomputed)}`}`,
          ),
          ...problems.map((problem) => `JOURNAL ${problem}`),
        ].join('\n') || '(no accounts)',
        { organization_id: options.org, ok, accounts: checks, journal_problems: problems },
      );
      if (!ok) process.exitCode = 1;
    });
};
