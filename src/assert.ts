/**
 * Invariants, TigerBeetle style: a condition the code relies on is checked where it is relied on, and a
 * broken one fails loudly with the invariant's name, never as an `undefined` that surfaces three calls later.
 * An assertion that fails is a bug (in this code, or in the database under it), not bad input: it is a 500,
 * logged with its name.
 */

/** A broken invariant; `invariant` says which rule did not hold. */
export class InvariantViolation extends Error {
  constructor(readonly invariant: string) {
    super(`invariant violated: ${invariant}`);
    this.name = 'InvariantViolation';
  }
}

/** Throws InvariantViolation(`invariant`) unless `condition` holds. */
export function assert(condition: unknown, invariant: string): asserts condition {
  if (!condition) throw new InvariantViolation(invariant);
}

/**
 * The first row of a result that must have one (an INSERT … RETURNING, an aggregate, a row locked before):
 * `rowOf(rows, 'an aggregate answers one row')`.
 */
export function rowOf<T>(rows: readonly T[], invariant: string): T {
  const row = rows[0];
  assert(row !== undefined, invariant);
  return row;
}
