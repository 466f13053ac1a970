import type { NextFunction, Request, Response } from 'express';
import type { QueryResult } from 'pg';
import type { Queryable } from '../db/pool';
import { errors } from '../errors';
import { admit, isWrite } from './admission';
import type { Edge } from './edge';
import { advisoryLockId, executeOrRefuse, idempotencyRequest, lockOrReplay, replayOf, storeResponse } from './idempotency';
import { parseJsonBody, parseWith, rejectUnknownQuery } from './input';
import { replayedAnswerText, storedAnswerText } from './sealedAnswers';
import type { AnyRoute, Caller, EdgeDeps, RouteContext, RouteResult } from './route';
import { WriteTransaction } from './writeTransaction';
import { recordPendingEvents } from '../outbox';

/** Running one request through the edge: admission, then a write's or a read's way to the operation. */

/** One admitted request on its way to its route's operation. */
interface Run {
  edge: Edge;
  deps: EdgeDeps;
  route: AnyRoute;
  req: Request;
  res: Response;
  caller: Caller;
  requestId: string;
  now: Date;
}

function sendJsonText(res: Response, status: number, text: string): void {
  res.status(status).type('application/json').send(text);
}

/** What a handler gets: the parsed input, and the request as a domain operation's scope. */
function contextOf<B, P, Q>(
  run: Run,
  db: Queryable,
  input: { body: B; params: P; query: Q },
  idempotencyKey: string | null,
  opening: QueryResult | null = null,
): RouteContext<B, P, Q> {
  const { caller, requestId, now, deps } = run;
  const op = { db, organizationId: caller.organization.id, now, deps, lifecyclePoke: run.edge.lifecyclePoke };
  return { caller, db, ...input, requestId, idempotencyKey, now, deps, op, opening };
}

/**
 * A POST: one database transaction holds the idempotency locks, the operation's writes and the stored
 * response, so a process that dies midway leaves nothing behind and no key locked (SPEC §5).
 */
async function runWrite(run: Run) {
  const { edge, deps, route, req, res, caller, requestId, now } = run;
  const body = parseJsonBody(req);
  const organizationId = caller.organization.id;
  const request = idempotencyRequest(route, req, body);
  const lockIds = request.identities.map((identity) => advisoryLockId(organizationId, identity));
  const opening = route.opening?.(body, organizationId) ?? null;
  const acquired = await lockOrReplay({ pool: deps.pool, inflight: edge.inflight, organizationId, request, lockIds, now, opening });
  if ('stored' in acquired) {
    const replay = replayOf(route, request, acquired.stored)!;
    res.set('Idempotent-Replayed', 'true');
    sendJsonText(res, replay.status_code, replayedAnswerText(deps.config, replay.response_body));
    return;
  }
  const { tx, storedAtLock, opening: read } = acquired;
  const release = edge.inflight.hold(lockIds);
  let committed = false;
  let status: number;
  let text: string;
  let afterCommit: RouteResult['afterCommit'];
  let events: RouteResult['events'];
  try {
    const replay = replayOf(route, request, storedAtLock);
    if (replay) {
      res.set('Idempotent-Replayed', 'true');
      status = replay.status_code;
      text = replayedAnswerText(deps.config, replay.response_body);
    } else {
      const params: unknown = parseWith(route.params, req.params, undefined);
      const query: unknown = parseWith(route.query, req.query, undefined);
      const parsedBody: unknown = parseWith(route.body, body, undefined);
      const idempotencyKey = request.identities.find((identity) => identity.scope === 'header')?.key ?? null;
      const outcome = await executeOrRefuse(tx, () =>
        route.handler(contextOf(run, tx.client, { body: parsedBody, params, query }, idempotencyKey, read)),
      );
      if ('done' in outcome) {
        status = outcome.done.status ?? route.response.status ?? 200;
        text = JSON.stringify(outcome.done.body);
        afterCommit = outcome.done.afterCommit;
        events = outcome.done.events;
      } else {
        // A business refusal executed: its answer is final and replays like a success.
        status = outcome.refused.status;
        text = JSON.stringify(outcome.refused.toBody(requestId));
        for (const [name, value] of Object.entries(outcome.refused.extra.headers ?? {})) res.set(name, value);
      }
      await storeResponse(tx.client, {
        organizationId,
        request,
        answer: { status, text: storedAnswerText(route, deps.config, text) },
        now,
        events,
      });
      await tx.commit();
      committed = true;
    }
  } finally {
    if (!committed) await tx.abandon();
    release();
  }
  afterCommit?.();
  sendJsonText(res, status, text);
}

async function runRead(run: Run) {
  const { deps, route, req, res } = run;
  const params: unknown = parseWith(route.params, req.params, undefined);
  const query: unknown = parseWith(route.query, req.query, undefined);
  const result = await route.handler(contextOf(run, deps.pool, { body: undefined, params, query }, null));
  if (result.send) return result.send(res);
  sendJsonText(res, result.status ?? route.response.status ?? 200, JSON.stringify(result.body));
}

/**
 * PUT and DELETE: naturally idempotent (the same request again leaves the same state), still one bounded
 * transaction. No stored answer: a PUT repeated after another PUT must set its values again, not replay.
 */
async function runWriteWithoutIdempotency(run: Run) {
  const { deps, route, req, res } = run;
  const params: unknown = parseWith(route.params, req.params, undefined);
  const query: unknown = parseWith(route.query, req.query, undefined);
  const body: unknown = route.body ? parseWith(route.body, parseJsonBody(req), undefined) : undefined;
  const tx = await WriteTransaction.checkout(deps.pool);
  let committed = false;
  let result: RouteResult;
  try {
    await tx.begin();
    result = await route.handler(contextOf(run, tx.client, { body, params, query }, null));
    await recordPendingEvents(tx.client, result.events ?? [], run.now);
    await tx.commit();
    committed = true;
  } finally {
    if (!committed) await tx.abandon();
  }
  result.afterCommit?.();
  sendJsonText(res, result.status ?? route.response.status ?? 200, JSON.stringify(result.body));
}

/**
 * The edge every endpoint passes through, in SPEC §4's order: authenticate (401) → allowlist (403, writes)
 * → rate limit (429) → idempotency → validation → the operation.
 */
export function edgeHandler(edge: Edge, deps: EdgeDeps, route: AnyRoute) {
  return async (req: Request, res: Response): Promise<void> => {
    const requestId = res.locals.requestId as string;
    const now = deps.clock.now();
    const write = isWrite(req.method);
    const caller = await admit({ edge, deps, req, res, write, now });
    rejectUnknownQuery(route.query, req.query);
    const run: Run = { edge, deps, route, req, res, caller, requestId, now };
    if (route.method === 'post') await runWrite(run);
    else if (write) await runWriteWithoutIdempotency(run);
    else await runRead(run);
  };
}

/**
 * Requests no route matched: 405 with Allow on a known path, else 404. Without credentials: at once (a
 * browser's /favicon.ico is no failed login). With credentials: the edge's checks first, so an
 * authenticated answer still carries X-RateLimit-*.
 */
export function edgeFallback(edge: Edge, deps: EdgeDeps, allowedMethods: (path: string) => string[] = () => []) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    if (req.get('authorization') !== undefined) await admit({ edge, deps, req, res, write: isWrite(req.method), now: deps.clock.now() });
    const allowed = allowedMethods(req.path);
    next(allowed.length > 0 ? errors.methodNotAllowed(req.method, req.path, allowed) : errors.routeNotFound(req.method, req.path));
  };
}
