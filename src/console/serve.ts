import fs from 'node:fs';
import path from 'node:path';
import express, { type NextFunction, type Request, type Response } from 'express';
import { REPO_ROOT, type Config } from '../config';
import { errors } from '../errors';
import { settlementDateOf, windowBounds } from '../easternDates';
import { transferDateOf } from '../settlement/contract';

/**
 * The operator console (SPEC §23, docs/console.md): a single page built by Vite into console/dist at install
 * (`npm ci` runs `prepare`), served here under /console. It holds no privilege: every call it makes goes to
 * the public API with the key its user signs in with. Only its own origin may serve it anything (CSP).
 */
export const CONSOLE_DIST = path.join(REPO_ROOT, 'console', 'dist');

/** Scripts, styles, images and calls from this origin only; no inline code, no frames, no plugins. */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

function secureHeaders(res: Response): void {
  res.set({
    'Content-Security-Policy': CONSOLE_CSP,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'Cross-Origin-Opener-Policy': 'same-origin',
  });
}

/** The Temporal Web UI the console links workflows to: TEMPORAL_UI_URL, else the embedded dev server's. */
export function temporalUiUrlOf(config: Config): string | null {
  if (config.TEMPORAL_UI_URL) return config.TEMPORAL_UI_URL.replace(/\/+$/, '');
  return config.TEMPORAL_ADDRESS ? null : `http://127.0.0.1:${config.TEMPORAL_UI_PORT}`;
}

/** What the page needs beside the API: where the Temporal UI is, and the open settlement window (SPEC §10, §15). */
export function consoleSettings(config: Config, now: Date) {
  const windowDate = settlementDateOf(now, config.SETTLEMENT_CUTOFF);
  const { start, end } = windowBounds(windowDate, config.SETTLEMENT_CUTOFF);
  return {
    environment: config.LEDGER_ENVIRONMENT,
    temporal_ui_url: temporalUiUrlOf(config),
    temporal_namespace: config.TEMPORAL_NAMESPACE,
    settlement_cutoff: config.SETTLEMENT_CUTOFF,
    settlement_calendar: config.SETTLEMENT_CALENDAR,
    now: now.toISOString(),
    open_window: {
      date: windowDate,
      opened_at: start.toISOString(),
      closes_at: end.toISOString(),
      transfer_date: transferDateOf(windowDate, config.SETTLEMENT_CUTOFF, config.SETTLEMENT_CALENDAR),
    },
  };
}

/** GET/HEAD /console (the page), /console/config.json and /console/assets/* (content-hashed, cached for a year). */
export function consoleRouter(config: Config, now: () => Date, dist: string = CONSOLE_DIST): express.Router {
  const router = express.Router({ strict: false });
  const page = path.join(dist, 'index.html');
  router.use((req: Request, res: Response, next: NextFunction) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      next('router');
      return;
    }
    secureHeaders(res);
    next();
  });
  router.get('/config.json', (_req, res) => {
    res.set('Cache-Control', 'no-store').json(consoleSettings(config, now()));
  });
  router.use(
    '/assets',
    express.static(path.join(dist, 'assets'), { immutable: true, maxAge: '365d', index: false, redirect: false, fallthrough: true }),
  );
  router.get('/', (_req, res, next) => {
    if (!fs.existsSync(page)) {
      next(errors.unavailable('The console is not built: run `npm run console:build` (npm ci builds it).'));
      return;
    }
    // The page names its hashed assets: always revalidated, so a deploy is seen at the next load.
    res.sendFile(page, { headers: { 'Cache-Control': 'no-cache' } });
  });
  return router;
}
