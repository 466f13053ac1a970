import querystring from 'node:querystring';
import type { Request } from 'express';
import type { ZodError, ZodType } from 'zod';
import { errors, type ErrorDetail } from '../errors';

/** Turning a request's raw parts into validated input: every refusal a 400 naming what is wrong. */

/**
 * Limits of the checks every request input passes before a schema or a query sees it: what Postgres cannot store (U+0000),
 * what is not text at all (a lone UTF-16 surrogate, which JSON's `\ud800` escape can spell), what would
 * cost a recursive walk its call stack (deep nesting), and query parameters the endpoint does not know
 * (a typo would otherwise return unfiltered data).
 */
export const INPUT_LIMITS = {
  /** Containers within containers in a JSON body; no endpoint's schema nests beyond a handful. */
  jsonDepthMax: 32,
  /** A reported `param` path is cut at this many characters, so an error never echoes a huge key. */
  paramLengthMax: 200,
};

type Problem = 'depth' | 'nul' | 'surrogate';

const PROBLEM_MESSAGES: Record<Problem, string> = {
  depth: `nests deeper than ${INPUT_LIMITS.jsonDepthMax} levels`,
  nul: 'must not contain the NUL character (U+0000)',
  surrogate: 'must be well-formed Unicode (no lone UTF-16 surrogates)',
};

/** A high surrogate not followed by a low one, or a low one not preceded by a high one (String#isWellFormed, ES2024). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

function stringProblem(value: string): Problem | null {
  if (value.includes('\0')) return 'nul';
  if (LONE_SURROGATE.test(value)) return 'surrogate';
  return null;
}

interface Node {
  value: unknown;
  name: string;
  parent: Node | null;
  depth: number;
}

function pathOf(node: Node | null): string[] {
  const names: string[] = [];
  for (let at = node; at && at.parent; at = at.parent) names.push(at.name);
  return names.reverse();
}

/**
 * The first problem in `input`, depth first, with its path. Iterative with parent links instead of copied
 * paths: time linear in the input's size, no call stack, whatever the nesting. `depthMax` counts containers
 * (the body object itself is level 1); Infinity for inputs that cannot nest (parameters).
 */
export function inputProblem(input: unknown, depthMax = INPUT_LIMITS.jsonDepthMax): { path: string[]; problem: Problem } | null {
  const stack: Node[] = [{ value: input, name: '', parent: null, depth: 0 }];
  while (stack.length > 0) {
    const node = stack.pop()!;
    const { value } = node;
    if (typeof value === 'string') {
      const problem = stringProblem(value);
      if (problem) return { path: pathOf(node), problem };
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    const depth = node.depth + 1;
    if (depth > depthMax) return { path: pathOf(node), problem: 'depth' };
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], name: String(i), parent: node, depth });
      continue;
    }
    const entries = Object.entries(value);
    for (const [key] of entries) {
      const problem = stringProblem(key);
      if (problem) return { path: pathOf(node), problem };
    }
    for (let i = entries.length - 1; i >= 0; i--) stack.push({ value: entries[i]![1], name: entries[i]![0], parent: node, depth });
  }
  return null;
}

function paramName(path: string[], whole = '(body)'): string {
  const joined = path.join('.') || whole;
  // A lone surrogate in a key on the path would make the error body itself ill-formed: it shows as U+FFFD.
  const printable = joined.replace(LONE_SURROGATES, '\uFFFD');
  return printable.length <= INPUT_LIMITS.paramLengthMax ? printable : `${printable.slice(0, INPUT_LIMITS.paramLengthMax)}…`;
}

/** Refuses a parsed JSON body that nests too deep or holds a string no field may hold. */
export function rejectIllFormedBody(body: unknown): void {
  const found = inputProblem(body);
  if (!found) return;
  if (found.problem === 'depth') {
    throw errors.invalidJson(`The request body ${PROBLEM_MESSAGES.depth}.`);
  }
  throw errors.validation([{ param: paramName(found.path), message: PROBLEM_MESSAGES[found.problem] }]);
}

/** Refuses path or query parameters holding a string no field may hold. */
export function rejectIllFormedParams(input: unknown): void {
  const found = inputProblem(input, Infinity);
  if (!found) return;
  throw errors.validation([{ param: paramName(found.path), message: PROBLEM_MESSAGES[found.problem] }]);
}

/** Query parameters that carry a key in brackets (`metadata[order_id]=1234`, SPEC §18). */
const KEYED_QUERY_PARAM = /^(metadata)\[([^[\]]*)\]$/;

/**
 * The edge's query parser: node's querystring (Express's 'simple' parser: a repeated name gives an array,
 * nothing else nests), with each `metadata[KEY]=VALUE` folded into one `metadata` object, so a schema
 * declares one parameter and names a bad key `metadata.KEY`. Deeper brackets are not folded and stay
 * unknown parameters. The folded object has no prototype: a key such as `__proto__` is only a key.
 */
export function parseQueryString(text: string): Record<string, unknown> {
  const parsed: Record<string, unknown> = querystring.parse(text);
  for (const [name, value] of Object.entries(parsed)) {
    const match = KEYED_QUERY_PARAM.exec(name);
    if (!match) continue;
    const [, param, key] = match as unknown as [string, string, string];
    // `metadata=x` beside `metadata[k]=v`: both stay as sent, and validation names the one it refuses.
    if (Object.hasOwn(parsed, param) && !isFoldedObject(parsed[param])) continue;
    parsed[param] ??= Object.create(null) as Record<string, unknown>;
    (parsed[param] as Record<string, unknown>)[key] = value;
    delete parsed[name];
  }
  return parsed;
}

function isFoldedObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The parameter names a query schema declares (a zod object's shape); none without a schema. */
function declaredParams(schema: ZodType | undefined): Set<string> {
  const shape = (schema as { shape?: Record<string, unknown> } | undefined)?.shape;
  return new Set(shape ? Object.keys(shape) : []);
}

/** 400 naming every query parameter the endpoint does not declare: a typo must not return unfiltered data. */
export function rejectUnknownQuery(schema: ZodType | undefined, query: unknown): void {
  if (query === null || typeof query !== 'object') return;
  const declared = declaredParams(schema);
  const unknown = Object.keys(query).filter((name) => !declared.has(name));
  if (unknown.length === 0) return;
  // `?=1` has a parameter named '' and is named so, not as the body.
  throw errors.validation(unknown.map((name) => ({ param: paramName([name], ''), message: 'is not a parameter of this endpoint' })));
}

export function zodDetails(error: ZodError, prefix?: string): ErrorDetail[] {
  return error.issues.map((issue) => {
    const path = issue.path.map(String).join('.');
    return { param: prefix ? (path ? `${prefix}.${path}` : prefix) : path || '(body)', message: issue.message };
  });
}

export function parseWith<T>(schema: ZodType<T> | undefined, input: unknown, prefix?: string): T {
  rejectIllFormedParams(input);
  if (!schema) return undefined as T;
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw errors.validation(zodDetails(parsed.error, prefix));
  return parsed.data;
}

export function parseJsonBody(req: Request): unknown {
  const raw = rawBody(req);
  if (raw.length === 0) return {};
  const type = req.get('content-type') ?? '';
  if (!/^application\/([\w.+-]+\+)?json\b/i.test(type)) throw errors.unsupportedMediaType();
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    throw errors.invalidJson();
  }
  rejectIllFormedBody(parsed);
  return parsed;
}

export function rawBody(req: Request): Buffer {
  return Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
}
