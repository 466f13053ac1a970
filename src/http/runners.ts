import type { NextFunction, Request, Response } from 'express';
import type { Queryable } from '../db/pool';
import { ApiError, errors } from '../errors';
import { admit, isWrite } from './admission';
import { advisoryLockId, idempotencyRequest, inflightOf, lockOrReplay, replayOf, storedResponses, storeResponse } from './idempotency';
import { parseJsonBody, parseWith, rejectUnknownQuery } from './input';
import { replayedAnswerText, storedAnswerText } from './sealedAnswers';
import type { AnyRoute, Caller, EdgeDeps, RouteContext, RouteResult } from './route';
import { beginWrite, checkout } from './writeTransaction';

/** Running one request through the edge: admission, then a write's or a read's way to the operation. */

function sendJsonText(res: Response, status: number, text: string): void {
  res.status(status).type('application/json').send(text);
}

/** What a handler gets: the parsed input, and the request as a domain operation's scope. */
function contextOf<B, P, Q>(
  deps: EdgeDeps,
  caller: Caller,
  db: Queryable,
  input: { body: B; params: P; query: Q },
  requestId: string,
  idempotencyKey: string | null,
  now: Date,
): RouteContext<B, P, Q> {
  return { caller, db, ...input, requestId, idempotencyKey, now, deps, op: { db, organizationId: caller.organization.id, now, deps } };
}

/**
 * A POST: one database transaction holds the idempotency locks, the operation's writes and the stored
 * response, so a process that dies midway leaves nothing behind and no key locked (SPEC §5).
 */
async function runWrite(deps: EdgeDeps, route: AnyRoute, req: Request, res: Response, caller: Caller, requestId: string, now: Date) {
  const body = parseJsonBody(req);
  const organizationId = caller.organization.id;
  const request = idempotencyRequest(route, req, body);
  const lockIds = request.identities.map((identity) => advisoryLockId(organizationId, identity));
  const acquired = await lockOrReplay(deps, organizationId, request, lockIds, now);
  if ('stored' in acquired) {
    const replay = replayOf(route, request, acquired.stored)!;
    res.set('Idempotent-Replayed', 'true');
    sendJsonText(res, replay.status_code, replayedAnswerText(deps.config, replay.response_body));
    return;
  }
  const { tx } = acquired;
  const inflight = inflightOf(deps);
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  for (const id of lockIds) inflight.set(id, finished);
  let committed = false;
  let status: number;
  let text: string;
  let afterCommit: RouteResult['afterCommit'];
  try {
    const replay = replayOf(route, request, await storedResponses(tx.client, organizationId, request, now));
    if (replay) {
      res.set('Idempotent-Replayed', 'true');
      status = replay.status_code;
      text = replayedAnswerText(deps.config, replay.response_body);
    } else {
      const params: unknown = parseWith(route.params, req.params, undefined);
      const query: unknown = parseWith(route.query, req.query, undefined);
      const parsedBody: unknown = parseWith(route.body, body, undefined);
      try {
        const idempotencyKey = request.identities.find((identity) => identity.scope === 'header')?.key ?? null;
        const result = await route.handler(
          contextOf(deps, caller, tx.client, { body: parsedBody, params, query }, requestId, idempotencyKey, now),
        );
        status = result.status ?? route.response.status ?? 200;
        text = JSON.stringify(result.body);
        afterCommit = result.afterCommit;
      } catch (error) {
        // A 400 judged the request against current state (an unknown id, an unverified identity, a used
        // token) like validation: it is not stored, so a retry after the operator fixes the cause executes.
        if (!(error instanceof ApiError) || error.status >= 500 || error.status === 400) throw error;
        // A business refusal executed (409 invalid_state, 404): its answer is final and replays like a success.
        await tx.client.query('ROLLBACK TO SAVEPOINT operation');
        status = error.status;
        text = JSON.stringify(error.toBody(requestId));
        for (const [name, value] of Object.entries(error.extra.headers ?? {})) res.set(name, value);
      }
      await storeResponse(tx.client, organizationId, request, { status, text: storedAnswerText(route, deps.config, text) }, now);
      await tx.client.query('COMMIT');
      committed = true;
    }
  } finally {
    if (committed) tx.release();
    else await tx.abandon();
    for (const id of lockIds) if (inflight.get(id) === finished) inflight.delete(id);
    finish();
  }
  if (afterCommit) await afterCommit();
  sendJsonText(res, status, text);
}

async function runRead(deps: EdgeDeps, route: AnyRoute, req: Request, res: Response, caller: Caller, requestId: string, now: Date) {
  const params: unknown = parseWith(route.params, req.params, undefined);
  const query: unknown = parseWith(route.query, req.query, undefined);
  const result = await route.handler(contextOf(deps, caller, deps.pool, { body: undefined, params, query }, requestId, null, now));
  if (result.send) return result.send(res);
  sendJsonText(res, result.status ?? route.response.status ?? 200, JSON.stringify(result.body));
}

/** DELETE and other non-POST writes: naturally idempotent, still one bounded transaction. */
async function runWriteWithoutIdempotency(
  deps: EdgeDeps,
  route: AnyRoute,
  req: Request,
  res: Response,
  caller: Caller,
  requestId: string,
  now: Date,
) {
  const params: unknown = parseWith(route.params, req.params, undefined);
  const query: unknown = parseWith(route.query, req.query, undefined);
  const tx = await checkout(deps.pool);
  let committed = false;
  let result: RouteResult;
  try {
    await tx.client.query(beginWrite());
    result = await route.handler(contextOf(deps, caller, tx.client, { body: undefined, params, query }, requestId, null, now));
    await tx.client.query('COMMIT');
    committed = true;
  } finally {
    if (committed) tx.release();
    else await tx.abandon();
  }
  if (result.afterCommit) await result.afterCommit();
  sendJsonText(res, result.status ?? route.response.status ?? 200, JSON.stringify(result.body));
}

/**
 * The edge every endpoint passes through, in SPEC §4's order: authenticate (401) → allowlist (403, writes)
 * → rate limit (429) → idempotency → validation → the operation.
 */
export function edgeHandler(deps: EdgeDeps, route: AnyRoute) {
  return async (req: Request, res: Response): Promise<void> => {
    const requestId = res.locals.requestId as string;
    const now = deps.clock.now();
    const write = isWrite(req.method);
    const caller = await admit(deps, req, res, write, now);
    rejectUnknownQuery(route.query, req.query);
    if (route.method === 'post') await runWrite(deps, route, req, res, caller, requestId, now);
    else if (write) await runWriteWithoutIdempotency(deps, route, req, res, caller, requestId, now);
    else await runRead(deps, route, req, res, caller, requestId, now);
  };
}

/**
 * Requests no route matched: 405 with Allow on a known path, else 404. Without credentials: at once (a
 * browser's /favicon.ico is no failed login). With credentials: the edge's checks first, so an
 * authenticated answer still carries X-RateLimit-*.
 */
export function edgeFallback(deps: EdgeDeps, allowedMethods: (path: string) => string[] = () => []) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    if (req.get('authorization') !== undefined) await admit(deps, req, res, isWrite(req.method), deps.clock.now());
    const allowed = allowedMethods(req.path);
    next(allowed.length > 0 ? errors.methodNotAllowed(req.method, req.path, allowed) : errors.routeNotFound(req.method, req.path));
  };
}
