import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import type { Config } from '../config';
import { forbiddenRange } from './addressRanges';
import { WEBHOOK_LIMITS } from './limits';

/**
 * Server-side request forgery guard (SPEC §12, docs/webhook-security.md). In production a webhook may only
 * reach public unicast addresses, judged by meaning in addressRanges.ts. Checked at registration and again
 * at delivery after DNS resolution, and the connection then goes to the checked addresses only (no second
 * lookup a rebinding DNS server could answer differently). Sandbox allows every address, so receivers on
 * localhost work in development.
 */
export function guardsTargets(config: Pick<Config, 'LEDGER_ENVIRONMENT'>): boolean {
  return config.LEDGER_ENVIRONMENT === 'production';
}

export { forbiddenRange };

/** Resolves a host name to every address it has, as node:dns's lookup({ all: true }) answers. */
export type Resolver = (host: string) => Promise<LookupAddress[]>;

function hostOf(url: URL): string {
  // WHATWG URL already normalized 0x7f.1 or 2130706433 to 127.0.0.1; IPv6 literals keep their brackets.
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

function isLocalName(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

export function resolveAll(host: string, timeoutMs = WEBHOOK_LIMITS.dnsTimeoutMs): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`DNS lookup of ${host} took over ${timeoutMs} ms`)), timeoutMs);
    dnsLookup(host, { all: true, verbatim: true }, (error, addresses) => {
      clearTimeout(timer);
      if (error) reject(error);
      else resolve(addresses.slice(0, WEBHOOK_LIMITS.dnsAddressesMax));
    });
  });
}

export type TargetCheck = { ok: true; host: string; addresses: LookupAddress[] | null } | { ok: false; reason: string };

/** Any forbidden answer refuses the target: a name pointing at both a public and a private address is not safe. */
export function judgeResolved(host: string, addresses: LookupAddress[]): TargetCheck {
  if (addresses.length === 0) return { ok: false, reason: `${host} has no addresses` };
  for (const { address } of addresses) {
    const range = forbiddenRange(address);
    if (range) return { ok: false, reason: `${host} resolves to ${address} (${range}), which webhooks may not reach in production` };
  }
  return { ok: true, host, addresses };
}

/**
 * At registration: literal addresses and local names are refused outright; a name that resolves to a
 * forbidden address is refused too. A name that does not resolve yet is accepted, because delivery checks
 * again after its own lookup.
 */
export async function checkTargetAtRegistration(
  config: Pick<Config, 'LEDGER_ENVIRONMENT'>,
  rawUrl: string,
  resolve: Resolver = resolveAll,
): Promise<string | null> {
  if (!guardsTargets(config)) return null;
  const host = hostOf(new URL(rawUrl));
  if (isIP(host) !== 0) {
    const range = forbiddenRange(host);
    return range ? `${host} is a ${range} address, which webhooks may not reach in production` : null;
  }
  if (isLocalName(host)) return `${host} is a local name, which webhooks may not reach in production`;
  let addresses: LookupAddress[];
  try {
    addresses = await resolve(host);
  } catch {
    return null;
  }
  const check = addresses.length > 0 ? judgeResolved(host, addresses) : null;
  return check && !check.ok ? check.reason : null;
}

/**
 * At delivery: resolves the host once and judges every answer; the addresses returned are the only ones
 * postWebhook may connect to. A literal is judged as written: Node connects to it without any lookup. In
 * sandbox nothing is resolved here.
 */
export async function checkTargetAtDelivery(
  config: Pick<Config, 'LEDGER_ENVIRONMENT'>,
  url: URL,
  resolve: Resolver = resolveAll,
): Promise<TargetCheck> {
  const host = hostOf(url);
  if (!guardsTargets(config)) return { ok: true, host, addresses: null };
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, reason: `${url.protocol} is not http or https` };
  const family = isIP(host);
  return judgeResolved(host, family !== 0 ? [{ address: host, family }] : await resolve(host));
}
