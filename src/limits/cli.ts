import { InvalidArgumentError } from 'commander';
import type { CommandRegistrar } from '../cli/registrar';
import { withTransaction } from '../db/pool';
import { getOrganization } from '../orgs/contract';
import * as repo from './repo';
import { DIRECTIONS, LIMIT_PERIODS, LIMITS_LIMITS } from './schemas';

/** A default's value: cents (an integer ≥ 0) or `none`. */
function limitValue(value: string): number | null {
  if (value === 'none') return null;
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(parsed) || parsed > LIMITS_LIMITS.limitCentsMax)
    throw new InvalidArgumentError('must be cents (an integer ≥ 0) or none');
  return parsed;
}

const optionOf = (direction: string, period: string) => `${direction.replace('_', '-')}-${period}`;
const camelOf = (direction: string, period: string) =>
  `${direction === 'cash_in' ? 'cashIn' : 'cashOut'}${period[0]!.toUpperCase()}${period.slice(1)}`;

/**
 * `org limits set --org O --cash-in-day N ...` and `org limits show --org O` (SPEC §26): an organization's
 * default limits, for users without their own. The operator's policy takes effect at once (the cooling-off
 * protects a user from their own raise, not from the operator's).
 */
export const registerLimitCommands: CommandRegistrar = (program, ctx) => {
  const org = program.commands.find((command) => command.name() === 'org') ?? program.command('org');
  const limits = org.command('limits').description("an organization's default limits per user (SPEC §26)");
  const set = limits.command('set').description('set (cents) or remove (none) default limits').requiredOption('--org <id>');
  for (const direction of DIRECTIONS)
    for (const period of LIMIT_PERIODS)
      set.option(`--${optionOf(direction, period)} <cents|none>`, `${direction} per Eastern ${period}`, limitValue);
  set.action(async (options: Record<string, string | number | null | undefined>) => {
    const given = DIRECTIONS.flatMap((direction) =>
      LIMIT_PERIODS.flatMap((period) => {
        const value = options[camelOf(direction, period)];
        return value === undefined ? [] : [{ direction, period, limitCents: value as number | null }];
      }),
    );
    if (given.length === 0)
      set.error('error: give at least one --cash-in-… or --cash-out-… limit', { code: 'commander.usage', exitCode: 2 });
    const { pool, out } = ctx();
    const organizationId = String(options.org);
    await withTransaction(pool, async (tx) => {
      await getOrganization(tx, organizationId);
      for (const each of given) await repo.setOrgDefault(tx, { organizationId, ...each, now: new Date() });
    });
    printDefaults(out, organizationId, await repo.orgDefaults(pool, organizationId));
  });
  limits
    .command('show')
    .description('print the default limits')
    .requiredOption('--org <id>')
    .action(async (options: { org: string }) => {
      const { pool, out } = ctx();
      await getOrganization(pool, options.org);
      printDefaults(out, options.org, await repo.orgDefaults(pool, options.org));
    });
};

function printDefaults(out: (human: string, json: unknown) => void, organizationId: string, defaults: repo.DefaultLimits): void {
  const line = (direction: (typeof DIRECTIONS)[number]) =>
    `${direction.padEnd(8)} ${LIMIT_PERIODS.map((period) => `${period} ${defaults[direction][period] ?? 'none'}`).join(', ')}`;
  out([`${organizationId} default limits (cents)`, ...DIRECTIONS.map(line)].join('\n'), { organization_id: organizationId, ...defaults });
}
