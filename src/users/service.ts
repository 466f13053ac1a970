import type { Queryable } from '../db/pool';
import { recordEvent } from '../outbox';
import { errors } from '../errors';
import { mergeMetadata, type MetadataUpdateBody } from '../metadata/schemas';
import type { Organization } from '../orgs/contract';
import * as repo from './repo';
import type { User, UserCreateBody, UserStatus } from './schemas';

/**
 * The user operations behind POST /user, the operator CLI and the sandbox simulation. Each runs inside the
 * caller's database transaction, so the user, its status history and its outbox event commit together.
 */

export async function createUser(
  tx: Queryable,
  input: { organization: Pick<Organization, 'id' | 'kyc_required'>; body: UserCreateBody; now: Date },
): Promise<{ user: User; created: boolean }> {
  const { organization, body, now } = input;
  // A known tag answers with the original user whatever else the body says: the same answer the edge's
  // 24-hour idempotency record gives, kept for as long as the user exists.
  if (body.tag) {
    const existing = await repo.findUserByTag(tx, organization.id, body.tag);
    if (existing) return { user: existing, created: false };
  }
  if (organization.kyc_required && !body.identity_verified) throw errors.identityNotVerified();
  await repo.setStatusSource(tx, 'api');
  const status: UserStatus = body.identity_verified ? 'enabled' : 'created';
  const result = await repo.insertUser(tx, { organizationId: organization.id, body, status, now });
  if (result.created) await recordEvent(tx, { organizationId: organization.id, type: 'user.created', data: result.user, createdAt: now });
  return result;
}

export interface StatusChange {
  user: User;
  previous_status: UserStatus;
  /** False when the user already had the requested status: nothing was written. */
  changed: boolean;
}

/**
 * created → enabled; enabled ↔ suspended; any → disabled (final) (SPEC §6). Asking for the status the user
 * already has changes nothing and succeeds, so retries are safe; any other move is 409 invalid_state.
 * Without `organizationId` (the operator CLI) the user may belong to any organization.
 */
export async function changeUserStatus(
  tx: Queryable,
  input: { userId: string; organizationId?: string; to: UserStatus; source: 'cli' | 'simulation'; now: Date },
): Promise<StatusChange> {
  const current = await repo.lockUser(tx, input.userId, input.organizationId);
  if (!current) throw errors.notFound('user', input.userId);
  const { organization_id: organizationId, ...user } = current;
  if (user.status === input.to) return { user, previous_status: user.status, changed: false };
  if (user.self_excluded_until !== null) {
    // SPEC §26: nobody lifts a self-exclusion early; its own end (src/limits/selfExclusion.ts) returns the user.
    throw errors.invalidState(
      `User ${input.userId} excluded themselves until ${user.self_excluded_until}; nobody can change its status before then.`,
    );
  }
  await repo.setStatusSource(tx, input.source);
  const updated = await repo.updateUserStatus(tx, input.userId, input.to, input.now);
  if (!updated) {
    throw errors.invalidState(
      user.status === 'disabled'
        ? `User ${input.userId} is disabled, which is final.`
        : `User ${input.userId} is ${user.status} and cannot become ${input.to}.`,
    );
  }
  await recordEvent(tx, {
    organizationId,
    type: 'user.status_changed',
    data: { ...updated, previous_status: user.status },
    createdAt: input.now,
  });
  return { user: updated, previous_status: user.status, changed: true };
}

/**
 * POST /user/{id} (SPEC §18): merges the given metadata keys into the stored ones (`null` deletes a key) under
 * the row's lock, so concurrent updates of one user each see the other's keys. Emits user.updated.
 */
export async function updateUser(
  tx: Queryable,
  input: { organizationId: string; userId: string; body: MetadataUpdateBody; now: Date },
): Promise<User> {
  const current = await repo.lockUser(tx, input.userId, input.organizationId);
  if (!current) throw errors.notFound('user', input.userId);
  const metadata = mergeMetadata(current.metadata, input.body.metadata);
  const user = await repo.updateUserMetadata(tx, input.userId, metadata, input.now);
  await recordEvent(tx, { organizationId: input.organizationId, type: 'user.updated', data: user, createdAt: input.now });
  return user;
}
