import fs from 'node:fs';
import { z } from 'zod';
import { isRoutingNumber } from './routingNumbers';

/**
 * What the operator agrees with their bank (the ODFI) and configures (SPEC §24, docs/ach.md): the file
 * header's facts, the SFTP server and its pinned host key, and the ACH windows. src/config.ts spreads
 * these fields into the one configuration schema; each is checked here so a typo stops the process at
 * start, naming the variable, instead of producing a file the bank rejects.
 */

/** `ssh-ed25519 AAAA… [comment]` → its type and key blob; the blob must name the same type. */
export function parseOpenSshPublicKey(line: string): { type: string; blob: Buffer } {
  const [type, base64] = line.trim().split(/\s+/);
  if (!type || !base64 || !/^[A-Za-z0-9+/]+={0,2}$/.test(base64)) {
    throw new Error('a public key in OpenSSH form: "<type> <base64>", e.g. "ssh-ed25519 AAAA…"');
  }
  const blob = Buffer.from(base64, 'base64');
  const nameLength = blob.length >= 4 ? blob.readUInt32BE(0) : -1;
  if (nameLength < 0 || blob.toString('latin1', 4, 4 + nameLength) !== type) {
    throw new Error(`the key's base64 does not hold a ${type} key`);
  }
  return { type, blob };
}

export interface SftpAddress {
  host: string;
  port: number;
  username: string;
  /** The directory holding `outbound/` and `inbound/` on the bank's server. */
  directory: string;
}

/** `sftp://user@host:port/dir` → its parts (port 22 when absent). */
export function parseSftpUrl(url: string): SftpAddress {
  const parsed = new URL(url);
  if (parsed.protocol !== 'sftp:' || !parsed.hostname || !parsed.username) {
    throw new Error('an SFTP address: sftp://user@host:port/dir');
  }
  if (parsed.password) throw new Error('no password in the address: the SFTP login is by key (ACH_SFTP_KEY_FILE)');
  const directory = decodeURIComponent(parsed.pathname).replace(/\/+$/, '') || '.';
  return { host: parsed.hostname, port: parsed.port ? Number(parsed.port) : 22, username: decodeURIComponent(parsed.username), directory };
}

function parses(parse: (value: string) => unknown) {
  return (value: string, ctx: z.RefinementCtx) => {
    try {
      parse(value);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: `must be ${(error as Error).message}` });
    }
  };
}

const ascii = (max: number) =>
  z
    .string()
    .regex(/^[\x20-\x7e]+$/, 'must be printable ASCII (NACHA files are ASCII)')
    .max(max);
const clock = /^([01]\d|2[0-3]):[0-5]\d$/;

/** Same-day windows' FedACH settlement times (Eastern) when ACH_WINDOWS names the window alone. */
const FED_SETTLEMENT_OF: Record<string, string> = { '10:30': '13:00', '14:45': '17:00', '16:45': '18:00' };

export interface AchWindow {
  /** Eastern HH:MM at which the window's file is built. */
  window: string;
  /** Eastern HH:MM at which its same-day entries settle. */
  settlement: string;
}

/** `10:30,14:45,16:45` or `10:30=13:00,…`: each window, with its settlement time, in the day's order. */
const achWindows = z.string().transform((raw, ctx): AchWindow[] => {
  const windows: AchWindow[] = [];
  for (const item of raw.split(',').map((part) => part.trim())) {
    const [window = '', settlement = FED_SETTLEMENT_OF[window]] = item.split('=');
    if (!clock.test(window) || settlement === undefined || !clock.test(settlement) || settlement <= window) {
      ctx.addIssue({
        code: 'custom',
        message: `"${item}" must be HH:MM=HH:MM (window=settlement, Eastern, settlement after the window); 10:30, 14:45 and 16:45 may stand alone`,
      });
      return z.NEVER;
    }
    windows.push({ window, settlement });
  }
  const ordered = windows.map((w) => w.window).join(',');
  if (ordered !== [...new Set(windows.map((w) => w.window))].sort().join(',')) {
    ctx.addIssue({ code: 'custom', message: 'must list each window once, in the order of the day' });
    return z.NEVER;
  }
  return windows;
});

export const ACH_SETTINGS = {
  ACH_ODFI_ROUTING: z.string().refine(isRoutingNumber, 'must be a 9-digit ABA routing number with its check digit').optional(),
  // Exactly 10 characters as the bank assigned it; 9 digits stand for a blank and those digits.
  ACH_IMMEDIATE_ORIGIN: z
    .string()
    .transform((value) => (/^\d{9}$/.test(value) ? ` ${value}` : value))
    .pipe(ascii(10).length(10, 'must be 10 characters (or 9 digits)'))
    .optional(),
  ACH_ODFI_NAME: ascii(23).optional(),
  ACH_ORIGIN_NAME: ascii(23).optional(),
  ACH_SFTP_URL: z.string().superRefine(parses(parseSftpUrl)).optional(),
  ACH_SFTP_KEY_FILE: z
    .string()
    .refine((file) => fs.existsSync(file), 'must name a readable private key file')
    .optional(),
  ACH_SFTP_HOST_KEY: z.string().superRefine(parses(parseOpenSshPublicKey)).optional(),
  ACH_WINDOWS: achWindows.default(achWindows.parse('10:30,14:45,16:45')),
  // SPEC §25: how often production's schedule looks in the bank's inbound/ for returns and notifications of change.
  ACH_INBOUND_POLL_SECONDS: z.coerce.number().int().min(10).max(86_400).default(300),
};

type AchSettings = z.infer<z.ZodObject<typeof ACH_SETTINGS>>;

const TOGETHER = [
  ['ACH_ODFI_ROUTING', 'ACH_IMMEDIATE_ORIGIN', 'ACH_ODFI_NAME', 'ACH_ORIGIN_NAME'],
  ['ACH_SFTP_URL', 'ACH_SFTP_KEY_FILE', 'ACH_SFTP_HOST_KEY'],
] as const;

/** Settings that only mean something together: a file header needs all four facts, a delivery all three. */
export function achSettingsIssues(config: AchSettings): [string, string][] {
  const issues: [string, string][] = [];
  for (const group of TOGETHER) {
    const set = group.filter((name) => config[name] !== undefined);
    if (set.length === 0 || set.length === group.length) continue;
    for (const name of group.filter((n) => config[n] === undefined)) issues.push([name, `must be set with ${set.join(', ')}`]);
  }
  return issues;
}

/**
 * Where ACH files go (SPEC §24): the server ACH_SFTP_URL names, in either environment; else sandbox's simulated
 * bank, and production keeps them undelivered (said at start; /readyz and a gauge say it too).
 */
export function achDeliveryStatus(config: {
  LEDGER_ENVIRONMENT: 'sandbox' | 'production';
  ACH_SFTP_URL?: string | undefined;
}): 'sftp' | 'simulated_bank' | 'not_configured' {
  if (config.ACH_SFTP_URL) return 'sftp';
  return config.LEDGER_ENVIRONMENT === 'sandbox' ? 'simulated_bank' : 'not_configured';
}
