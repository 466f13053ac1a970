import { InvalidArgumentError } from 'commander';
import type { CommandRegistrar } from '../cli/registrar';
import { withTransaction } from '../db/pool';
import { USER_STATUSES, type UserStatus } from './schemas';
import { changeUserStatus } from './service';

/** Statuses the operator may set; `created` is only ever a starting point. */
const SETTABLE: readonly UserStatus[] = USER_STATUSES.filter((status) => status !== 'created');

function settableStatus(value: string): UserStatus {
  if (!(SETTABLE as readonly string[]).includes(value)) throw new InvalidArgumentError(`must be one of ${SETTABLE.join(', ')}`);
  return value as UserStatus;
}

/** `user set-status U enabled|suspended|disabled`: the operator's hand on the user lifecycle (SPEC §6, §13). */
export const registerUserCommands: CommandRegistrar = (program, ctx) => {
  const user = program.command('user').description('end users of an organization');
  user
    .command('set-status')
    .description('move a user through its lifecycle: created → enabled; enabled ↔ suspended; any → disabled (final)')
    .argument('<user_id>', 'the user (user_…)')
    .argument('<status>', SETTABLE.join('|'), settableStatus)
    .action(async (userId: string, status: UserStatus) => {
      const { pool, out } = ctx();
      const change = await withTransaction(pool, (tx) => changeUserStatus(tx, { userId, to: status, source: 'cli', now: new Date() }));
      out(change.changed ? `${userId}: ${change.previous_status} → ${change.user.status}` : `${userId}: already ${change.user.status}`, {
        user_id: userId,
        status: change.user.status,
        previous_status: change.previous_status,
        changed: change.changed,
      });
    });
};
