import { Command, InvalidArgumentError } from 'commander';
import { registerAchCommands } from '../ach/cli';
import { registerBankAccountCommands } from '../bankAccounts/cli';
import { databaseUrlOf, loadConfig } from '../config';
import { createPool } from '../db/pool';
import { ApiError } from '../errors';
import * as orgs from '../orgs/repo';
import { registerJournalCommands } from '../journal/cli';
import { registerAchReturnCommands } from '../ach/returnsCli';
import { registerLedgerCommands } from '../ledger/cli';
import { registerLimitCommands } from '../limits/cli';
import { registerRefundCommands } from '../refunds/cli';
import { registerSettlementCommands } from '../settlement/cli';
import { registerCalendarCommands, registerSettlementReportCommands } from '../settlement/reportCli';
import { registerUserCommands } from '../users/cli';
import { registerWebhookCommands } from '../webhooks/cli';
import type { CliContext, CommandRegistrar } from './registrar';

/** The operator CLI (SPEC §13): the service operator's tool, never HTTP. */

function positiveInt(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1 || parsed > 1_000_000) throw new InvalidArgumentError('must be an integer from 1 to 1000000');
  return parsed;
}

/** An allowlist entry, checked while parsing so a bad one is a usage error (exit 2), not a failed command. */
function cidrArg(value: string): string {
  try {
    orgs.normalizeCidr(value);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
  return value;
}

function bool(value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new InvalidArgumentError('must be true or false');
}

const registerOrgCommands: CommandRegistrar = (program, ctx) => {
  const org = program.command('org').description('organizations (operators)');
  org
    .command('create')
    .description('create an organization with a settlement account and an API key of this environment')
    .requiredOption('--name <name>', 'organization name')
    .option('--kyc-required <bool>', 'whether users must have verified identities (true|false)', bool, true)
    .action(async (options: { name: string; kycRequired: boolean }) => {
      const { config, pool, out } = ctx();
      const created = await orgs.createOrganization(pool, {
        name: options.name,
        kycRequired: options.kycRequired,
        environment: config.LEDGER_ENVIRONMENT,
      });
      out(
        [
          `organization ${created.organization.id} (${created.organization.name}), KYC ${created.organization.kyc_required ? 'required' : 'not required'}`,
          `account      ${created.account.id}`,
          `api key      ${created.key.api_key}  (shown once; only its hash is stored)`,
        ].join('\n'),
        {
          organization_id: created.organization.id,
          account_id: created.account.id,
          api_key: created.key.api_key,
          key_id: created.key.id,
          kyc_required: created.organization.kyc_required,
          environment: created.key.environment,
        },
      );
    });

  const key = program.command('key').description('API keys');
  key
    .command('create')
    .requiredOption('--org <id>')
    .description('issue a new API key (shown once)')
    .action(async (options: { org: string }) => {
      const { config, pool, out } = ctx();
      const issued = await orgs.createKey(pool, options.org, config.LEDGER_ENVIRONMENT);
      out(`key ${issued.id}: ${issued.api_key}  (shown once)`, {
        key_id: issued.id,
        api_key: issued.api_key,
        environment: issued.environment,
      });
    });
  key
    .command('list')
    .requiredOption('--org <id>')
    .description("list an organization's keys (never the keys themselves)")
    .action(async (options: { org: string }) => {
      const { pool, out } = ctx();
      const keys = await orgs.listKeys(pool, options.org);
      out(
        keys
          .map(
            (k) =>
              `${k.id}  sk_${k.environment}_…${k.last4}  created ${k.created_at.toISOString()}${k.revoked_at ? `  revoked ${k.revoked_at.toISOString()}` : ''}`,
          )
          .join('\n') || '(no keys)',
        { keys: keys.map((k) => ({ ...k, created_at: k.created_at.toISOString(), revoked_at: k.revoked_at?.toISOString() ?? null })) },
      );
    });
  key
    .command('revoke')
    .argument('<key_id>')
    .description('revoke a key; it fails authentication from now on')
    .action(async (keyId: string) => {
      const { pool, out } = ctx();
      const revoked = await orgs.revokeKey(pool, keyId);
      out(`revoked ${revoked.id}`, { key_id: revoked.id, revoked_at: revoked.revoked_at?.toISOString() ?? null });
    });

  const allowlist = program.command('allowlist').description('IP allowlist for write requests');
  for (const action of ['add', 'remove'] as const) {
    allowlist
      .command(action)
      .description(action === 'add' ? 'allow writes from an address or range' : 'stop allowing an address or range')
      .requiredOption('--org <id>')
      .requiredOption('--ip <cidr>', 'an IPv4/IPv6 address or CIDR range', cidrArg)
      .action(async (options: { org: string; ip: string }) => {
        const { pool, out } = ctx();
        if (action === 'add') {
          const cidr = await orgs.addAllowlistEntry(pool, options.org, options.ip);
          out(`allowed ${cidr}`, { organization_id: options.org, added: cidr, allowlist: await orgs.listAllowlist(pool, options.org) });
        } else {
          const removed = await orgs.removeAllowlistEntry(pool, options.org, options.ip);
          out(removed ? `removed ${options.ip}` : `${options.ip} was not on the list`, {
            organization_id: options.org,
            removed,
            allowlist: await orgs.listAllowlist(pool, options.org),
          });
        }
      });
  }
  allowlist
    .command('list')
    .description("an organization's allowlist (empty: every address may write)")
    .requiredOption('--org <id>')
    .action(async (options: { org: string }) => {
      const { pool, out } = ctx();
      const entries = await orgs.listAllowlist(pool, options.org);
      out(entries.join('\n') || '(empty: every address may write)', { organization_id: options.org, allowlist: entries });
    });

  program
    .command('account')
    .description('settlement accounts')
    .command('create')
    .description('another settlement account of an organization')
    .requiredOption('--org <id>')
    .requiredOption('--name <name>')
    .action(async (options: { org: string; name: string }) => {
      const { pool, out } = ctx();
      const account = await orgs.createAccount(pool, options.org, options.name);
      out(`account ${account.id} (${account.name})`, {
        account_id: account.id,
        organization_id: account.organization_id,
        name: account.name,
      });
    });

  const rateLimit = program.command('rate-limit').description('per-organization rate limits');
  const setRateLimit = rateLimit
    .command('set')
    .description('set the write and/or read limit (requests per sliding 60 s)')
    .requiredOption('--org <id>')
    .option('--write <n>', 'write requests per 60 s', positiveInt)
    .option('--read <n>', 'read requests per 60 s', positiveInt);
  setRateLimit.action(async (options: { org: string; write?: number; read?: number }) => {
    // Printed and exit 2 like commander's own parse errors.
    if (options.write === undefined && options.read === undefined)
      setRateLimit.error('error: give --write and/or --read', { code: 'commander.usage', exitCode: 2 });
    const { pool, out } = ctx();
    const org = await orgs.setRateLimits(pool, options.org, options);
    out(`${org.id}: write ${org.rate_limit_write}/min, read ${org.rate_limit_read}/min`, {
      organization_id: org.id,
      write: org.rate_limit_write,
      read: org.rate_limit_read,
    });
  });
};

/** Feature modules add their commands here (user set-status, settlement run, ...). */
export const commandRegistrars: CommandRegistrar[] = [
  registerOrgCommands,
  registerUserCommands,
  registerLedgerCommands,
  registerJournalCommands,
  registerSettlementCommands,
  registerRefundCommands,
  registerSettlementReportCommands,
  registerCalendarCommands,
  registerWebhookCommands,
  registerBankAccountCommands,
  registerLimitCommands,
  registerAchCommands,
  registerAchReturnCommands,
];

/**
 * How long the operator CLI waits for a connection to Postgres: a paused or overloaded database (a SIGSTOP, a
 * failover, a box at full load) is waited out instead of failing an operator's command at the api's 5 s.
 * Nothing is written before the connection, so a command that still fails after it changed nothing.
 */
export const CLI_CONNECT_TIMEOUT_MS = 30_000;

/** The whole command tree; `ctx` is called only by a command that runs (help and usage errors need no database). */
export function buildAdminProgram(ctx: () => CliContext): Command {
  const program = new Command('admin')
    .description('Operator CLI of the payments ledger')
    .option('--json', 'print one JSON object on stdout');
  program.exitOverride();
  for (const register of commandRegistrars) register(program, ctx);
  return program;
}

export async function runAdmin(argv: string[]): Promise<number> {
  let context: CliContext | undefined;
  const json = () => Boolean(program.opts().json);
  const ctx = (): CliContext => {
    if (!context) {
      const config = loadConfig();
      context = {
        config,
        pool: createPool(databaseUrlOf(config), 4, undefined, CLI_CONNECT_TIMEOUT_MS),
        out: (human, payload) => process.stdout.write(`${json() ? JSON.stringify(payload) : human}\n`),
      };
    }
    return context;
  };
  const program = buildAdminProgram(ctx);
  try {
    await program.parseAsync(argv, { from: 'user' });
    // A check that found a problem (account verify, webhook verify-secrets) answered and set the exit
    // code; it is this run's result, taken back so the caller's own process.exitCode assignment keeps it.
    const code = Number(process.exitCode ?? 0);
    process.exitCode = undefined;
    return code;
  } catch (error) {
    const err = error as { code?: string; exitCode?: number; message: string };
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return 0;
    const code = err.code?.startsWith('commander.')
      ? 'usage'
      : error instanceof orgs.NotFoundError
        ? 'not_found'
        : error instanceof ApiError
          ? error.code
          : 'failed';
    const message = err.message.replace(/^error: /, '');
    if (json()) process.stdout.write(`${JSON.stringify({ error: { code, message } })}\n`);
    else if (!err.code?.startsWith('commander.')) process.stderr.write(`error: ${message}\n`);
    return code === 'usage' ? 2 : 1;
  } finally {
    await context?.pool.end();
  }
}
