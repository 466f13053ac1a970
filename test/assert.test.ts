import { assert, InvariantViolation, rowOf } from '../src/assert';

describe('assert: a broken invariant fails loudly, by name', () => {
  test('rowOf answers the first row, and names the invariant when there is none', () => {
    expect(rowOf([{ n: 1 }, { n: 2 }], 'count(*) answers one row')).toEqual({ n: 1 });
    expect(() => rowOf([], 'count(*) answers one row')).toThrow(new InvariantViolation('count(*) answers one row'));
    expect(() => rowOf([], 'count(*) answers one row')).toThrow('invariant violated: count(*) answers one row');
  });

  test('assert passes a holding condition and throws InvariantViolation with its name otherwise', () => {
    expect(() => assert(1 + 1 === 2, 'arithmetic')).not.toThrow();
    let caught: unknown = null;
    try {
      assert(0, 'a balance is never negative');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(InvariantViolation);
    expect((caught as InvariantViolation).invariant).toBe('a balance is never negative');
  });
});
