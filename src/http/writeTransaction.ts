import type { QueryResult } from 'pg';
import type { Pool, PoolClient } from '../db/pool';
import { EDGE_LIMITS } from './limits';

/** What opens every write's transaction: BEGIN and its bounds. */
const OPENING = [
  'BEGIN',
  `SET LOCAL statement_timeout = ${EDGE_LIMITS.transactionStatementTimeoutMs}`,
  `SET LOCAL idle_in_transaction_session_timeout = ${EDGE_LIMITS.transactionIdleTimeoutMs}`,
];

const SAVEPOINT_NAME = /^[a-z_]+$/;

/**
 * One write's database transaction on a pooled connection it holds until `commit` or `abandon`. Opening it
 * takes one round trip, together with the statements and the savepoint the caller needs first.
 */
export class WriteTransaction {
  private released = false;
  private readonly savepoints = new Set<string>();

  private constructor(readonly client: PoolClient) {}

  static async checkout(pool: Pool): Promise<WriteTransaction> {
    return new WriteTransaction(await pool.connect());
  }

  /**
   * BEGIN with the write's bounds, then `statements` (one SQL statement each, no parameters), then the
   * savepoint `savepoint` if named, in one round trip. Answers each statement's result by its name. The
   * savepoint is set here, not in a round trip of its own: what comes first (locks) is what it keeps.
   */
  async begin<Name extends string = never>(
    statements: Record<Name, string> = {} as Record<Name, string>,
    options: { savepoint?: string } = {},
  ): Promise<Record<Name, QueryResult>> {
    const names = Object.keys(statements) as Name[];
    const sql = [...OPENING, ...names.map((name) => statements[name])];
    if (options.savepoint !== undefined) sql.push(savepointStatement(options.savepoint));
    const results = (await this.client.query(sql.join('; '))) as unknown as QueryResult[];
    // Each statement answers one result: a statement that was really several would shift every name after it.
    if (results.length !== sql.length) throw new Error(`begin sent ${sql.length} statements but got ${results.length} results`);
    if (options.savepoint !== undefined) this.savepoints.add(options.savepoint);
    return Object.fromEntries(names.map((name, i) => [name, results[OPENING.length + i]!])) as Record<Name, QueryResult>;
  }

  /** Undoes everything since the savepoint `name`, keeping what came before it (the locks taken first). */
  async rollbackTo(name: string): Promise<void> {
    if (!this.savepoints.has(name)) throw new Error(`no savepoint ${name} in this transaction`);
    await this.client.query(`ROLLBACK TO SAVEPOINT ${name}`);
  }

  /** Commits and hands the connection back to the pool. */
  async commit(): Promise<void> {
    await this.client.query('COMMIT');
    this.release();
  }

  /** Rolls back and releases; a connection that cannot even roll back is destroyed, never reused. */
  async abandon(): Promise<void> {
    if (this.released) return;
    try {
      await this.client.query('ROLLBACK');
      this.release();
    } catch {
      this.release(true);
    }
  }

  private release(destroy = false): void {
    if (this.released) return;
    this.released = true;
    this.client.release(destroy);
  }
}

function savepointStatement(name: string): string {
  if (!SAVEPOINT_NAME.test(name)) throw new Error(`a savepoint name is lower-case letters and underscores: ${name}`);
  return `SAVEPOINT ${name}`;
}
