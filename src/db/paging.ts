import { errors } from '../errors';
import type { Queryable } from './pool';

/**
 * The one paging scheme of every list (SPEC §8): newest first by keyset on (created_at DESC, id DESC), and
 * the cursor is the id of the previous page's last row (Stripe's `starting_after`). The cursor row's own
 * (created_at, id) is read in SQL, to the microsecond, so a row inserted while a client pages lands before
 * the cursor or after it and never shifts the rows still to come. An id that is not a row of the caller's
 * list is a 400 naming `cursor`.
 */

export interface PageRequest {
  limit: number;
  cursor?: string | undefined;
}

export interface ListPage<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

/** Builds a WHERE clause and its parameters together, so `$n` always matches the value's position. */
export class Filters {
  readonly params: unknown[];
  readonly conditions: string[];
  /** Which rows of the list's table a cursor may name: the list's own scope, over alias `c`. */
  readonly cursorScope: string;

  /**
   * `first` is the organization the list belongs to: `$1`, which every list filters on. `withUnowned` also admits
   * rows that belong to no organization (an inbound ACH item that matched no entry, SPEC §25).
   */
  constructor(organizationColumn: string, organizationId: string, options: { withUnowned?: boolean } = {}) {
    this.params = [organizationId];
    this.conditions = [
      options.withUnowned ? `(${organizationColumn} = $1 OR ${organizationColumn} IS NULL)` : `${organizationColumn} = $1`,
    ];
    this.cursorScope = options.withUnowned ? '(c.organization_id = $1 OR c.organization_id IS NULL)' : 'c.organization_id = $1';
  }

  /** Adds `sql` with each `?` replaced by the next parameter (one value, however often the condition uses it). */
  add(sql: string, value: unknown): this {
    this.params.push(value);
    this.conditions.push(sql.replaceAll('?', `$${this.params.length}`));
    return this;
  }

  /** Adds a condition that takes no parameter. */
  where(sql: string): this {
    this.conditions.push(sql);
    return this;
  }

  /** Adds `sql` with each `?` replaced by the next parameter when `value` is given. */
  optional(sql: string, value: unknown): this {
    return value === undefined || value === null ? this : this.add(sql, value);
  }
}

const CURSOR_MESSAGE = 'is not a cursor this list returned';

/**
 * One page of `table` (aliased `alias` in `from`), newest first. `select` is the column list; `filters` must
 * hold the organization as `$1`. Returns the raw rows of the page; the caller renders them.
 */
export async function keysetPage<R extends { id: string }>(
  db: Queryable,
  spec: { select: string; from: string; table: string; alias: string; filters: Filters; page: PageRequest },
): Promise<ListPage<R>> {
  const { alias, table, page } = spec;
  const params = [...spec.filters.params];
  const conditions = [...spec.filters.conditions];
  if (page.cursor !== undefined) {
    params.push(page.cursor);
    conditions.push(
      `(${alias}.created_at, ${alias}.id) < (SELECT c.created_at, c.id FROM ${table} c WHERE c.id = $${params.length} AND ${spec.filters.cursorScope})`,
    );
  }
  params.push(page.limit + 1);
  const { rows } = await db.query<R>(
    `SELECT ${spec.select} FROM ${spec.from} WHERE ${conditions.join(' AND ')}
      ORDER BY ${alias}.created_at DESC, ${alias}.id DESC LIMIT $${params.length}`,
    params,
  );
  if (page.cursor !== undefined && rows.length === 0) {
    const { rows: found } = await db.query(`SELECT 1 FROM ${table} c WHERE c.id = $2 AND ${spec.filters.cursorScope}`, [
      params[0],
      page.cursor,
    ]);
    if (found.length === 0) throw errors.validation([{ param: 'cursor', message: CURSOR_MESSAGE }]);
  }
  const has_more = rows.length > page.limit;
  const data = has_more ? rows.slice(0, page.limit) : rows;
  return { data, has_more, next_cursor: has_more ? data[data.length - 1]!.id : null };
}

/** The same page with its rows rendered (in one batch, so a renderer can load related rows once). */
export async function renderPage<R, T>(page: ListPage<R>, render: (rows: R[]) => T[] | Promise<T[]>): Promise<ListPage<T>> {
  return { ...page, data: await render(page.data) };
}
