/**
 * Fails when a function's own body runs past FUNCTION_LINES_MAX lines in the product's code (src/, workflows/,
 * activities/, ops/ when it exists, and the operator console's console/src, TSX included): a longer function is
 * usually two steps and a loop that want names of their own. A nested function's lines count for it, not for the function around it. Every function, method,
 * accessor, constructor and arrow is measured: the lines between a block body's braces, or an expression body's.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const FUNCTION_LINES_MAX = 70;
const ROOTS = ['src', 'workflows', 'activities', 'ops', 'console/src'];

export interface LongFunction {
  file: string;
  name: string;
  line: number;
  ownLines: number;
}

type FunctionNode = ts.FunctionLikeDeclaration & { body: ts.ConciseBody };

function isMeasured(node: ts.Node): node is FunctionNode {
  return (
    (ts.isFunctionDeclaration(node) ||
      ts.isFunctionExpression(node) ||
      ts.isArrowFunction(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isConstructorDeclaration(node) ||
      ts.isGetAccessorDeclaration(node) ||
      ts.isSetAccessorDeclaration(node)) &&
    node.body !== undefined
  );
}

/** What a reader calls the function: its own name, or the variable, property or call it is written in. */
function nameOf(node: FunctionNode, source: ts.SourceFile): string {
  if (node.name) return node.name.getText(source);
  const parent = node.parent;
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) && parent.name) return parent.name.getText(source);
  if (ts.isCallExpression(parent)) {
    const callee = parent.expression;
    return `(callback of ${ts.isPropertyAccessExpression(callee) ? `.${callee.name.text}` : callee.getText(source)})`;
  }
  return '(anonymous)';
}

const lineOf = (source: ts.SourceFile, position: number) => source.getLineAndCharacterOfPosition(position).line;

/** Every function in `source` with the number of lines of its body that are not inside a nested function's body. */
export function measureFunctions(file: string, text: string): LongFunction[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const measured: LongFunction[] = [];
  const measure = (fn: FunctionNode) => {
    // A block body's lines are those between its braces; an expression body's are all of its own.
    const braces = ts.isBlock(fn.body) ? 1 : 0;
    const first = lineOf(source, fn.body.getStart(source)) + braces;
    const last = lineOf(source, fn.body.getEnd()) - braces;
    const nestedLines = new Set<number>();
    const collectNested = (node: ts.Node) => {
      if (isMeasured(node)) {
        // The nested body's lines are its own; the line it starts on (its header) stays with the caller.
        const from = lineOf(source, node.body.getStart(source)) + 1;
        for (let line = from; line <= lineOf(source, node.body.getEnd()); line += 1) nestedLines.add(line);
        return;
      }
      ts.forEachChild(node, collectNested);
    };
    ts.forEachChild(fn.body, collectNested);
    const ownLines = last - first + 1 - [...nestedLines].filter((line) => line >= first && line <= last).length;
    measured.push({ file, name: nameOf(fn, source), line: lineOf(source, fn.getStart(source)) + 1, ownLines });
  };
  const visit = (node: ts.Node) => {
    if (isMeasured(node)) measure(node);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return measured;
}

function sourceFiles(root: string, dir: string): string[] {
  const absolute = path.join(root, dir);
  if (!fs.existsSync(absolute)) return [];
  return fs
    .readdirSync(absolute, { recursive: true, encoding: 'utf8' })
    .filter((name) => /\.tsx?$/.test(name) && !name.endsWith('.d.ts'))
    .map((name) => path.posix.join(dir, name.split(path.sep).join('/')))
    .sort();
}

/** The functions past the limit under `root`'s product folders. */
export function longFunctions(root: string): LongFunction[] {
  return ROOTS.flatMap((dir) => sourceFiles(root, dir))
    .flatMap((file) => measureFunctions(file, fs.readFileSync(path.join(root, file), 'utf8')))
    .filter((fn) => fn.ownLines > FUNCTION_LINES_MAX);
}

if (require.main === module) {
  const long = longFunctions(path.resolve(__dirname, '..'));
  const describe = (fn: LongFunction) => `${fn.file}:${fn.line} ${fn.name}: ${fn.ownLines} lines (max ${FUNCTION_LINES_MAX})`;
  for (const fn of long) process.stderr.write(`too long: ${describe(fn)}\n`);
  if (long.length > 0) process.exit(1);
}
