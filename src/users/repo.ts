import { Filters, keysetPage, type ListPage, type PageRequest } from '../db/paging';
import type { Queryable } from '../db/pool';
import { newId } from '../ids';
import type { Metadata } from '../metadata/schemas';
import { metadataContains } from '../metadata/sql';
import type { User, UserCreateBody, UserStatus } from './schemas';
import { rowOf } from '../assert';

/** The SQL owned by users and their status history (migrations/0004_users.sql). */

interface UserRow {
  id: string;
  organization_id: string;
  tag: string | null;
  status: UserStatus;
  identity_verified: boolean;
  /** SPEC §26: set while the user is self-excluded (Infinity: indefinitely). */
  self_excluded_until: Date | number | null;
  metadata: Metadata;
  created_at: Date;
}

/** Only the columns the API shows; personal data stays in the table. */
const PUBLIC_COLUMNS = 'id, organization_id, tag, status, identity_verified, self_excluded_until, metadata, created_at';

/** A self-exclusion's end as the API writes it: node-postgres reads `infinity` as Infinity. */
export function exclusionEndText(until: Date | number): string {
  return until instanceof Date && Number.isFinite(until.getTime()) ? until.toISOString() : 'indefinite';
}

export function toUser(
  row: Pick<UserRow, 'id' | 'tag' | 'status' | 'identity_verified' | 'self_excluded_until' | 'metadata' | 'created_at'>,
): User {
  const excluded = row.self_excluded_until !== null;
  return {
    id: row.id,
    tag: row.tag,
    status: row.status,
    identity_verified: row.identity_verified,
    suspended_reason: excluded ? 'self_exclusion' : null,
    self_excluded_until: excluded ? exclusionEndText(row.self_excluded_until!) : null,
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
  };
}

/**
 * The user's status, or null when the organization has no such user. Money movement asks this, inside its
 * own transaction, to refuse users that are not `enabled` (SPEC §6). With `lock: 'share'` the answer holds
 * until that transaction ends: a concurrent suspension waits for it instead of slipping in between.
 */
export async function getUserStatus(
  db: Queryable,
  organizationId: string,
  userId: string,
  options: { lock?: 'share' } = {},
): Promise<UserStatus | null> {
  const { rows } = await db.query<{ status: UserStatus }>(
    `SELECT status FROM users WHERE organization_id = $1 AND id = $2${options.lock === 'share' ? ' FOR SHARE' : ''}`,
    [organizationId, userId],
  );
  return rows[0]?.status ?? null;
}

export async function getUser(db: Queryable, organizationId: string, userId: string): Promise<User | null> {
  const { rows } = await db.query<UserRow>(`SELECT ${PUBLIC_COLUMNS} FROM users WHERE organization_id = $1 AND id = $2`, [
    organizationId,
    userId,
  ]);
  return rows[0] ? toUser(rows[0]) : null;
}

export async function findUserByTag(db: Queryable, organizationId: string, tag: string): Promise<User | null> {
  const { rows } = await db.query<UserRow>(`SELECT ${PUBLIC_COLUMNS} FROM users WHERE organization_id = $1 AND tag = $2`, [
    organizationId,
    tag,
  ]);
  return rows[0] ? toUser(rows[0]) : null;
}

/** Names who is changing statuses in this transaction; the history trigger records it. */
export async function setStatusSource(db: Queryable, source: 'api' | 'cli' | 'simulation' | 'self_exclusion'): Promise<void> {
  await db.query(`SELECT set_config('ledger.status_source', $1, true)`, [source]);
}

/**
 * Inserts the user unless the organization already has one with this tag. Racing inserts of one tag
 * meet at the unique index: the loser waits for the winner's commit, inserts nothing and reads the winner.
 */
export async function insertUser(
  db: Queryable,
  input: { organizationId: string; body: UserCreateBody; status: UserStatus; now: Date },
): Promise<{ user: User; created: boolean }> {
  const { body } = input;
  const address = {
    address_line_1: body.address.address_line_1,
    address_line_2: body.address.address_line_2 ?? null,
    locality: body.address.locality,
    administrative_area: body.address.administrative_area,
    postal_code: body.address.postal_code,
    country: body.address.country,
  };
  const { rows } = await db.query<UserRow>(
    `INSERT INTO users (id, organization_id, tag, status, identity_verified, first_name, last_name, email, date_of_birth,
                        phone_number, address, government_id_type, government_id_last4, government_id_state, metadata, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $16)
     ON CONFLICT (organization_id, tag) WHERE tag IS NOT NULL DO NOTHING
     RETURNING ${PUBLIC_COLUMNS}`,
    [
      newId('user'),
      input.organizationId,
      body.tag ?? null,
      input.status,
      body.identity_verified,
      body.name.first,
      body.name.last,
      body.email,
      body.date_of_birth,
      body.phone_number ?? null,
      JSON.stringify(address),
      body.government_id.type,
      body.government_id.last4,
      body.government_id.state ?? null,
      JSON.stringify(body.metadata ?? {}),
      input.now,
    ],
  );
  if (rows[0]) return { user: toUser(rows[0]), created: true };
  // Only a tag can conflict; the statement waited for the other insert to commit, so this read sees it.
  const existing = await findUserByTag(db, input.organizationId, body.tag!);
  if (!existing) throw new Error('users insert conflicted but no user holds the tag');
  return { user: existing, created: false };
}

/** One page of the organization's users, newest first (SPEC §8's one paging scheme, src/db/paging.ts). */
export async function listUsers(
  db: Queryable,
  organizationId: string,
  page: PageRequest & { status?: UserStatus | undefined; metadata?: Metadata | undefined },
): Promise<ListPage<User>> {
  const filters = metadataContains(
    new Filters('u.organization_id', organizationId).optional('u.status = ?', page.status),
    'u',
    page.metadata,
  );
  const found = await keysetPage<UserRow>(db, { select: PUBLIC_COLUMNS, from: 'users u', table: 'users', alias: 'u', filters, page });
  return { ...found, data: found.data.map(toUser) };
}

/**
 * Locks the user row for a status change. Without an organization (the operator CLI) any user is found;
 * with one, another organization's user is as absent as an unknown id.
 */
export async function lockUser(
  db: Queryable,
  userId: string,
  organizationId?: string,
): Promise<(User & { organization_id: string }) | null> {
  const { rows } = await db.query<UserRow>(
    `SELECT ${PUBLIC_COLUMNS} FROM users WHERE id = $1 AND ($2::text IS NULL OR organization_id = $2) FOR UPDATE`,
    [userId, organizationId ?? null],
  );
  return rows[0] ? { ...toUser(rows[0]), organization_id: rows[0].organization_id } : null;
}

/** lockUser of many (no organization), in id order so two lockers of overlapping users cannot deadlock; the users found. */
export async function lockUsers(db: Queryable, userIds: readonly string[]): Promise<Array<User & { organization_id: string }>> {
  if (userIds.length === 0) return [];
  const { rows } = await db.query<UserRow>(`SELECT ${PUBLIC_COLUMNS} FROM users WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`, [
    [...new Set(userIds)],
  ]);
  return rows.map((row) => ({ ...toUser(row), organization_id: row.organization_id }));
}

/**
 * Moves a locked user to `to` if the lifecycle allows it. The guard is the database's own
 * user_status_transition_allowed, the function its trigger enforces, so the rule has one definition.
 */
export async function updateUserStatus(db: Queryable, userId: string, to: UserStatus, now: Date): Promise<User | null> {
  return (await updateUsersStatus(db, [userId], to, now))[0] ?? null;
}

/** updateUserStatus of many locked users, in one statement: answers those it moved. */
export async function updateUsersStatus(db: Queryable, userIds: readonly string[], to: UserStatus, now: Date): Promise<User[]> {
  if (userIds.length === 0) return [];
  const { rows } = await db.query<UserRow>(
    `UPDATE users SET status = $2, updated_at = greatest($3::timestamptz, updated_at)
      WHERE id = ANY($1::text[]) AND user_status_transition_allowed(status, $2)
      RETURNING ${PUBLIC_COLUMNS}`,
    [[...new Set(userIds)], to, now],
  );
  return rows.map(toUser);
}

/** Replaces a locked user's metadata (the caller merged it); the status and its history are untouched. */
export async function updateUserMetadata(db: Queryable, userId: string, metadata: Metadata, now: Date): Promise<User> {
  const { rows } = await db.query<UserRow>(
    `UPDATE users SET metadata = $2, updated_at = greatest($3::timestamptz, updated_at) WHERE id = $1 RETURNING ${PUBLIC_COLUMNS}`,
    [userId, JSON.stringify(metadata), now],
  );
  return toUser(rowOf(rows, 'the user whose metadata changes is locked by the caller, so it exists'));
}

/**
 * Puts a locked user under a self-exclusion until `until` ('infinity': indefinitely), or, with `until` null and
 * `status` its status before, ends it. The database's own guard (users_self_exclusion_guard) refuses an end
 * before its time whoever asks.
 */
export async function setSelfExclusion(
  db: Queryable,
  input: { userId: string; status: UserStatus; until: Date | 'infinity' | null; now: Date },
): Promise<User> {
  const { rows } = await db.query<UserRow>(
    `UPDATE users SET status = $2, self_excluded_until = $3, updated_at = greatest($4::timestamptz, updated_at)
      WHERE id = $1 RETURNING ${PUBLIC_COLUMNS}`,
    [input.userId, input.status, input.until, input.now],
  );
  return toUser(rowOf(rows, 'the user whose exclusion changes is locked by the caller, so it exists'));
}
