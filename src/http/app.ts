import express, { type NextFunction, type Request, type Response } from 'express';
import pinoHttp from 'pino-http';
import client from 'prom-client';
import swaggerUi from 'swagger-ui-express';
import { newId } from '../ids';
import { Edge } from './edge';
import { EDGE_LIMITS } from './limits';
import type { AnyRoute, EdgeDeps } from './route';
import { edgeFallback, edgeHandler } from './runners';
import { ApiError, errors } from '../errors';
import { achDeliveryStatus } from '../achSettings';
import { ledgerRegistry, registerLifecycleQueueGauges } from '../metrics';
import { parseQueryString, rejectUnknownQuery } from './input';
import { allowedMethodsOf } from './methods';
import { buildOpenApiDocument, expressPath, OPERATIONAL_PATHS, type DocumentExtras } from './openapi';
import { requireHost } from './parserErrors';

export interface ApiDeps extends EdgeDeps {
  /** Checks behind /readyz; each resolves when its dependency answers. One failing makes /readyz 503. */
  readiness: Record<string, () => Promise<void>>;
  /**
   * Checks /readyz names in its body without failing on them: Temporal (SPEC §20), since the API serves
   * reads and writes without it (the lifecycle queue waits for it).
   */
  informational?: Record<string, () => Promise<void>>;
}

/**
 * What the features add to the app beside their routes, built by the composition root (src/api.ts) so this
 * shared layer imports no feature.
 */
export interface AppFeatures {
  routes: AnyRoute[];
  /** The operator console (SPEC §23), mounted at /console. */
  console: express.Router;
  documentExtras: DocumentExtras;
  /** The features' gauges, registered on this process's metrics registry (GET /metrics). */
  registerGauges: (registry: client.Registry, deps: ApiDeps) => void;
}

const READINESS_TIMEOUT_MS = 2_000;

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** The route a request matched, as metrics and logs label it: its pattern, never its ids. */
function routeLabel(req: Request): string {
  return (req.route as { path?: string } | undefined)?.path ?? 'unmatched';
}

function finishedRequestProps(req: Request, res: Response, line: object): object {
  return { ...line, route: routeLabel(req), organization_id: res.locals.organizationId as string | undefined };
}

/** The app and its edge (what it keeps between requests), which the caller closes after the server. */
export function createApp(deps: ApiDeps, features: AppFeatures): { app: express.Express; edge: Edge } {
  const { routes } = features;
  const edge = new Edge(deps.pool, deps.log);
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', deps.config.TRUST_PROXY);
  app.set('query parser', parseQueryString);

  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const httpDuration = new client.Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });

  registerLifecycleQueueGauges(registry, deps.pool);
  features.registerGauges(registry, deps);
  // The ledger's own counters (src/metrics.ts) beside this process's defaults and request durations.
  const exposed = client.Registry.merge([registry, ledgerRegistry]);

  app.use((req: Request, res: Response, next: NextFunction) => {
    const requestId = newId('req');
    res.locals.requestId = requestId;
    res.set('X-Request-Id', requestId);
    const end = httpDuration.startTimer({ method: req.method });
    res.on('finish', () => end({ route: routeLabel(req), status: String(res.statusCode) }));
    next();
  });
  app.use(
    pinoHttp({
      logger: deps.log,
      genReqId: (_req, res) => res.locals.requestId as string,
      // Added to the finished line only, when the route matched and the caller is known: pino-http's
      // customProps is read both at the start and at the end, and its two children each wrote a `route`.
      customSuccessObject: (req, res, line: object) => finishedRequestProps(req as Request, res as Response, line),
      customErrorObject: (req, res, _error, line: object) => finishedRequestProps(req as Request, res as Response, line),
      customAttributeKeys: { responseTime: 'duration_ms' },
      serializers: {
        req: (req: { id: string; method: string; url: string; remoteAddress?: string }) => ({
          id: req.id,
          method: req.method,
          url: req.url,
        }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
      // Every request leaves one line at the default level; failures of the service itself stand out.
      customLogLevel: (_req, res, error) => (error || res.statusCode >= 500 ? 'error' : 'info'),
    }),
  );

  app.use(requireHost);

  // The operational endpoints take no parameters: one sent is a mistake worth telling, as on the API.
  const noQuery = (req: Request, _res: Response, next: NextFunction) => {
    rejectUnknownQuery(undefined, req.query);
    next();
  };
  app.get('/healthz', noQuery, (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', noQuery, async (_req, res) => {
    const checks: Record<string, string> = {};
    await Promise.all(
      Object.entries({ ...deps.informational, ...deps.readiness }).map(async ([name, check]) => {
        try {
          await withTimeout(check(), READINESS_TIMEOUT_MS);
          checks[name] = 'ok';
        } catch (error) {
          checks[name] = `unavailable: ${(error as Error).message}`;
        }
      }),
    );
    // SPEC §24: production without ACH_SFTP_URL builds ACH files and keeps them undelivered; named, not failed.
    if (achDeliveryStatus(deps.config) === 'not_configured') {
      checks.ach_delivery = 'unavailable: ACH_SFTP_URL is not set; ACH files are built and kept undelivered';
    }
    const failing = Object.entries(checks).filter(([name, state]) => state !== 'ok' && name in deps.readiness);
    if (failing.length === 0) {
      res.json({ status: 'ready', checks });
      return;
    }
    const error = errors.unavailable(`Not ready: ${failing.map(([name]) => name).join(', ')} unreachable.`);
    res.set(error.extra.headers ?? {});
    res.status(503).json({
      ...error.toBody(res.locals.requestId as string),
      checks,
    });
  });
  app.get('/metrics', noQuery, async (_req, res) => {
    res.type(registry.contentType).send(await exposed.metrics());
  });
  const document = buildOpenApiDocument(routes, deps.config.LEDGER_ENVIRONMENT, features.documentExtras);
  app.get('/openapi.json', noQuery, (_req, res) => {
    res.json(document);
  });
  const docs = express.Router();
  docs.use(swaggerUi.serve, swaggerUi.setup(document, { customSiteTitle: 'Payments ledger API 0.0.1' }));
  // Swagger UI would answer any method with its page; other methods fall through to 405.
  app.use('/docs', (req, res, next) => (req.method === 'GET' || req.method === 'HEAD' ? docs(req, res, next) : next()));
  // The operator console (SPEC §23): a static page that calls the API above with its user's key.
  app.use('/console', features.console);

  // Raw bytes, not parsed: the edge authenticates before it parses, and the exact-body idempotency
  // fallback hashes exactly what was sent.
  app.use(express.raw({ type: () => true, limit: EDGE_LIMITS.bodyBytesMax }));

  mountRoutes(app, edge, deps, routes);

  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const requestId = res.locals.requestId as string;
    const apiError = toApiError(error);
    if (apiError.status >= 500) req.log[apiError.status === 503 ? 'warn' : 'error']({ err: error }, 'request failed');
    if (res.headersSent) return;
    res.set(apiError.extra.headers ?? {});
    res.status(apiError.status).json(apiError.toBody(requestId));
  });
  return { app, edge };
}

/**
 * The API's routes, and its answer to a request none of them takes (405 with Allow on a known path, else 404).
 * Paths without parameters first, each with its own 405: such a path is never an id, so `GET /intent/batch`
 * is 405, not a lookup of the intent `batch` by `/intent/{id}`.
 */
function mountRoutes(app: express.Express, edge: Edge, deps: ApiDeps, routes: AnyRoute[]): void {
  const mounted = routes.filter((route) => !route.sandboxOnly || deps.config.LEDGER_ENVIRONMENT === 'sandbox');
  const fallback = edgeFallback(edge, deps, allowedMethodsOf([...OPERATIONAL_PATHS, ...mounted]));
  const literal = mounted.filter((route) => !route.path.includes('{'));
  for (const route of literal) app[route.method](expressPath(route.path), edgeHandler(edge, deps, route));
  if (literal.length > 0) app.all([...new Set(literal.map((route) => expressPath(route.path)))], fallback);
  for (const route of mounted.filter((route) => route.path.includes('{'))) {
    app[route.method](expressPath(route.path), edgeHandler(edge, deps, route));
  }
  app.use(fallback);
}

/** Every failure becomes one error object (SPEC §3); nothing internal (stack, SQL, secrets) leaves the process. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const type = (error as { type?: unknown } | null)?.type;
  if (type === 'entity.too.large') return errors.payloadTooLarge(EDGE_LIMITS.bodyBytesMax);
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') return errors.unsupportedMediaType();
  if (type === 'request.aborted' || type === 'request.size.invalid') return errors.invalidJson('The request body was cut short.');
  if (isUnavailable(error)) return errors.unavailable('A backing service is briefly unavailable; retry after the time in Retry-After.');
  // What Express and body-parser refuse themselves, e.g. a path with broken percent-encoding or a body
  // whose Content-Encoding does not decode: the client's mistake, told without the internal detail.
  const status =
    (error as { status?: unknown; statusCode?: unknown } | null)?.status ?? (error as { statusCode?: unknown } | null)?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new ApiError({
      status,
      type: 'invalid_request_error',
      code: 'invalid_request',
      message: 'The request could not be read (malformed path, headers or body encoding).',
    });
  }
  return errors.internal();
}

/**
 * Postgres or Temporal (or the network to them) failing for a moment: connection refused or lost, the pool
 * exhausted, a statement timing out, a deadlock or serialization failure. Retrying with the same
 * idempotency key is safe: a write that did commit replays its stored answer.
 */
function isUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message, errors: inner } = error as { code?: unknown; message?: unknown; errors?: unknown };
  if (typeof code === 'string') {
    if (/^(08|53)/.test(code) || ['57P01', '57P02', '57P03', '57014', '40001', '40P01', '55P03'].includes(code)) return true;
    if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH'].includes(code)) return true;
  }
  if (typeof message === 'string' && /timeout exceeded when trying to connect|Connection terminated|not queryable/i.test(message))
    return true;
  return Array.isArray(inner) && inner.some(isUnavailable);
}
