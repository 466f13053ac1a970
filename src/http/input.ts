import type { Request } from 'express';
import type { ZodError, ZodType } from 'zod';
import { errors, type ErrorDetail } from '../errors';

/** Turning a request's raw parts into validated input: every refusal a 400 naming what is wrong. */

export function zodDetails(error: ZodError, prefix?: string): ErrorDetail[] {
  return error.issues.map((issue) => {
    const path = issue.path.map(String).join('.');
    return { param: prefix ? (path ? `${prefix}.${path}` : prefix) : path || '(body)', message: issue.message };
  });
}

/**
 * The path of the first string (or object key) holding U+0000, which Postgres text cannot store: refused
 * here as a validation error rather than failing later inside some query as a 500. Iterative, with parent
 * links instead of copied paths, so a deeply nested body costs time linear in its size and no call stack.
 */
function nulPath(input: unknown): string[] | null {
  interface Node { value: unknown; name: string; parent: Node | null }
  const pathOf = (node: Node | null): string[] => {
    const names: string[] = [];
    for (let at = node; at && at.parent; at = at.parent) names.push(at.name);
    return names.reverse();
  };
  const stack: Node[] = [{ value: input, name: '', parent: null }];
  while (stack.length > 0) {
    const node = stack.pop()!;
    const { value } = node;
    if (typeof value === 'string') {
      if (value.includes('\0')) return pathOf(node);
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], name: String(i), parent: node });
    } else if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value);
      for (const [key] of entries) if (key.includes('\0')) return pathOf(node);
      for (let i = entries.length - 1; i >= 0; i--) stack.push({ value: entries[i]![1], name: entries[i]![0], parent: node });
    }
  }
  return null;
}

const PARAM_LENGTH_MAX = 200;

function rejectNul(input: unknown): void {
  const found = nulPath(input);
  if (!found) return;
  const param = found.join('.') || '(body)';
  throw errors.validation([{
    param: param.length <= PARAM_LENGTH_MAX ? param : `${param.slice(0, PARAM_LENGTH_MAX)}…`,
    message: 'must not contain the NUL character (U+0000)',
  }]);
}

export function parseWith<T>(schema: ZodType<T> | undefined, input: unknown, prefix?: string): T {
  rejectNul(input);
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
  rejectNul(parsed);
  return parsed;
}

export function rawBody(req: Request): Buffer {
  return Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
}
