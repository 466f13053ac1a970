import type { Response } from 'express';
import type { QueryResult } from 'pg';
import type { ZodType } from 'zod';
import type { ApiError } from '../errors';
import { errors } from '../errors';
import type { Queryable } from '../db/pool';
import type { Environment, Organization } from './apiKeys';
import type { AppDeps, Op, Outcome } from '../services';

/** How an endpoint is declared: once, with its schemas, for the edge to run and /openapi.json to document. */

export interface Clock {
  now(): Date;
}
export const systemClock: Clock = { now: () => new Date() };

/** What a route's handler may reach; the app builds it once. */
export interface EdgeDeps extends AppDeps {
  clock: Clock;
}

export interface Caller {
  organization: Organization;
  keyId: string;
  environment: Environment;
}

export interface RouteContext<B, P, Q> {
  caller: Caller;
  /** Inside a write: the request's own database transaction. Inside a read: the pool. */
  db: Queryable;
  body: B;
  params: P;
  query: Q;
  requestId: string;
  /** The request's X-Idempotency-Key header, when it sent one (a POST's; null otherwise). */
  idempotencyKey: string | null;
  now: Date;
  deps: EdgeDeps;
  /** The same request as a domain operation's scope: db, the caller's organization, now, deps. */
  op: Op;
  /** A POST's opening read (RouteDef.opening): its result, or null when the route has none or the body gave none. */
  opening: QueryResult | null;
}

/** The operation's outcome; `afterCommit` (counters, pokes: never awaited) runs after the request's transaction commits. */
export interface RouteResult extends Outcome<unknown> {
  status?: number;
  /** Reads only: writes the response itself instead of `body` as JSON (a streamed CSV statement). */
  send?: (res: Response) => Promise<void>;
}

export interface RouteDef<B = unknown, P = unknown, Q = unknown> {
  method: 'get' | 'post' | 'put' | 'delete';
  /** OpenAPI-style path: `/user/{id}`. */
  path: string;
  tag: string;
  /** The OpenAPI operationId, when the one derived from method and path reads badly. */
  operationId?: string;
  summary: string;
  description?: string;
  body?: ZodType<B>;
  /**
   * The body as the OpenAPI document shows it, when that is not what the edge validates first: a batch is
   * checked as an envelope here and each item by its own schema later, so one bad item fails only itself.
   */
  documentedBody?: ZodType;
  params?: ZodType<P>;
  query?: ZodType<Q>;
  /** `otherContent`: further media types the same response may take (`text/csv`), documented beside JSON. */
  response: { status?: number; schema: ZodType; description: string; otherContent?: Record<string, ZodType> };
  /** Error statuses worth documenting beyond the edge's own (401, 403, 429, ...). */
  errorStatuses?: number[];
  /** POST only: how SPEC §5 recognises a duplicate of this endpoint. */
  idempotency?: {
    /** A unique body field that identifies a duplicate (`tag`, `token`). */
    bodyField?: string;
    /** Demands X-Idempotency-Key (400 without it). */
    requireHeader?: boolean;
    /**
     * The body field matched an earlier request whose body differs: by default that is still a duplicate and
     * replays (a `tag` names its user); a single-use value answers this error instead (not stored).
     */
    onFieldReuse?: (value: string) => ApiError;
    /**
     * The body carries secrets (card numbers): the request is fingerprinted by what this returns instead of
     * the body itself, so no hash of a secret is stored, and an identical body alone is no duplicate.
     */
    fingerprint?: (body: unknown) => unknown;
    /**
     * The answer shows a secret (a webhook's signing secret): its stored copy, replayed to duplicates, is
     * sealed with WEBHOOK_SECRET_KEY (src/http/sealedAnswers.ts) so the secret never rests in the clear.
     */
    sealsAnswer?: boolean;
  };
  /**
   * A POST's read sent with its opening round trip, after the idempotency locks and stored answers (issue 37): one
   * SQL statement of literals made from the raw body, before validation (null: none for this body), its result
   * handed to the handler as `opening`. The handler must check that it answers the body as validated.
   */
  opening?: (body: unknown, organizationId: string) => string | null;
  /** Exists only in sandbox; production does not route it at all (404). */
  sandboxOnly?: boolean;
  handler(ctx: RouteContext<B, P, Q>): Promise<RouteResult>;
}

export function defineRoute<B = unknown, P = unknown, Q = unknown>(route: RouteDef<B, P, Q>): RouteDef<B, P, Q> {
  return route;
}

/**
 * GET /<resource>/{id}: the caller's own resource, or 404 — an id of another organization answers exactly
 * like an unknown one (SPEC §3), so no route can reveal that it exists.
 */
export function retrieveRoute<P extends { id: string }, T>(
  route: Omit<RouteDef<unknown, P, unknown>, 'method' | 'handler' | 'errorStatuses'> & {
    /** The noun in the 404 message: "No such <resource>: '<id>'." */
    resource: string;
    find: (db: Queryable, organizationId: string, id: string) => Promise<T | null | undefined>;
  },
): RouteDef<unknown, P, unknown> {
  const { resource, find, ...rest } = route;
  return defineRoute<unknown, P, unknown>({
    ...rest,
    method: 'get',
    errorStatuses: [404],
    async handler({ caller, db, params }) {
      const found = await find(db, caller.organization.id, params.id);
      if (found === null || found === undefined) throw errors.notFound(resource, params.id);
      return { body: found };
    },
  });
}

/** A route of any body, params and query types: what the app mounts and the OpenAPI document lists. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each route's own types are checked where it is defined
export type AnyRoute = RouteDef<any, any, any>;
