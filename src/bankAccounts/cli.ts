import { InvalidArgumentError } from 'commander';
import type { CommandRegistrar } from '../cli/registrar';
import { NotFoundError } from '../orgs/contract';
import { abaValid } from '../tokens/contract';
import { setOrganizationAch } from './repo';
import { accountNumberInput, ACCOUNT_TYPES, type AccountType } from './schemas';
import { storeOperatorBankAccount } from './service';

/**
 * Operator commands for the ACH rail's own data (SPEC §24): the operator's bank account behind each
 * settlement account, and each organization's originator identity. Set by the CLI only, never over HTTP.
 * Output shows the masked form only; the number itself is sealed before it reaches the database.
 */

// Parse errors are usage errors (exit 2) and never repeat the value.
function routingArg(value: string): string {
  if (!abaValid(value)) throw new InvalidArgumentError('is not a valid ABA routing number (9 digits, checksum, Federal Reserve prefix)');
  return value;
}

function accountTypeArg(value: string): AccountType {
  if (!(ACCOUNT_TYPES as readonly string[]).includes(value)) throw new InvalidArgumentError('must be checking or savings');
  return value as AccountType;
}

function printableArg(lengthMax: number): (value: string) => string {
  return (value) => {
    if (!new RegExp(`^[ -~]{1,${lengthMax}}$`).test(value))
      throw new InvalidArgumentError(`must be 1 to ${lengthMax} printable ASCII characters`);
    return value;
  };
}

export const registerBankAccountCommands: CommandRegistrar = (program, ctx) => {
  const account = program.commands.find((command) => command.name() === 'account') ?? program.command('account');
  const set = account
    .command('bank-account')
    .description("the operator's bank account behind a settlement account (the ACH rail's CCD entries)")
    .command('set')
    .description('set or replace it; the account number is stored sealed with BANK_DATA_KEY')
    .requiredOption('--account <id>', 'settlement account (account_…)')
    .requiredOption('--routing <routing>', 'ABA routing number', routingArg)
    .requiredOption('--number <number>', 'account number, 4 to 17 letters or digits')
    .option('--type <type>', 'checking | savings', accountTypeArg, 'checking' as AccountType);
  set.action(async (options: { account: string; routing: string; number: string; type: AccountType }) => {
    // Checked here, not by an option parser: commander's message for a refused argument repeats its value.
    const number = accountNumberInput.safeParse(options.number);
    if (!number.success) set.error(`error: --number ${number.error.issues[0]!.message}`, { code: 'commander.usage', exitCode: 2 });
    const { config, pool, out } = ctx();
    const stored = await storeOperatorBankAccount(pool, config, {
      accountId: options.account,
      routingNumber: options.routing,
      number: options.number,
      accountType: options.type,
      now: new Date(),
    });
    if (!stored) throw new NotFoundError(`no account ${options.account}`);
    out(`account ${stored.account_id}: bank account ${stored.routing_number} …${stored.last4} (${stored.account_type})`, {
      account_id: stored.account_id,
      routing_number: stored.routing_number,
      last4: stored.last4,
      account_type: stored.account_type,
      updated_at: stored.updated_at.toISOString(),
    });
  });

  const org = program.commands.find((command) => command.name() === 'org') ?? program.command('org');
  org
    .command('ach')
    .description("an organization's ACH originator identity (its batches' company id and name)")
    .command('set')
    .description('set or replace it')
    .requiredOption('--org <id>')
    .requiredOption('--company-id <id>', "NACHA Company Identification, 1 to 10 characters (often '1' + the EIN)", printableArg(10))
    .requiredOption('--company-name <name>', 'NACHA Company Name, 1 to 16 characters', printableArg(16))
    .action(async (options: { org: string; companyId: string; companyName: string }) => {
      const { pool, out } = ctx();
      const set = await setOrganizationAch(pool, {
        organization_id: options.org,
        company_id: options.companyId,
        company_name: options.companyName,
        updated_at: new Date(),
      });
      if (!set) throw new NotFoundError(`no organization ${options.org}`);
      out(`${set.organization_id}: ACH company ${set.company_id} "${set.company_name}"`, {
        organization_id: set.organization_id,
        company_id: set.company_id,
        company_name: set.company_name,
        updated_at: set.updated_at.toISOString(),
      });
    });
};
