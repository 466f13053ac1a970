import path from 'node:path';
import { longFunctions, measureFunctions } from '../scripts/function-length';

const lines = (n: number, text: string) => Array.from({ length: n }, () => text).join('\n');

describe('the 70-line function limit checker (npm run lint:functions)', () => {
  test("a function's own lines are those between its braces, with a nested function's body counted for the nested one", () => {
    const source = [
      'export function outer() {',
      lines(3, '  step();'),
      '  const inner = () => {',
      lines(5, '    work();'),
      '  };',
      '  class Box {',
      '    get size() {',
      lines(2, '      return 1;'),
      '    }',
      '  }',
      '  return [inner, Box];',
      '}',
    ].join('\n');
    const measured = Object.fromEntries(measureFunctions('src/x.ts', source).map((fn) => [fn.name, fn.ownLines]));
    // outer: 3 steps, the `const inner` line, the class's three lines of its own and the return; the nested bodies
    // (and their closing braces) belong to inner and size.
    expect(measured).toEqual({ outer: 3 + 1 + 3 + 1, inner: 5, size: 2 });
  });

  test('71 lines is one too many; expression-bodied arrows are measured too', () => {
    const source = [
      'const long = () => {',
      lines(71, '  step();'),
      '};',
      'const short = () => {',
      lines(70, '  step();'),
      '};',
      'const value = () => [',
      lines(3, '  1,'),
      '];',
    ].join('\n');
    expect(measureFunctions('src/x.ts', source).map(({ name, ownLines }) => [name, ownLines])).toEqual([
      ['long', 71],
      ['short', 70],
      ['value', 5],
    ]);
  });

  test('no function of the product (src/, workflows/, activities/, ops/) runs past the limit', () => {
    expect(longFunctions(path.resolve(__dirname, '..'))).toEqual([]);
  });
});
