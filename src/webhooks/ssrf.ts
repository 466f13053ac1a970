import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import ipaddr from 'ipaddr.js';
import type { Config } from '../config';
import { WEBHOOK_LIMITS } from './limits';

/**
 * Server-side request forgery guard (SPEC §12). In production a webhook may only reach globally routable
 * unicast addresses: never loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7), link-local
 * (169.254/16 with the 169.254.169.254 metadata service, fe80::/10), unspecified, multicast, carrier NAT or
 * other reserved space, and no AWS fd00:ec2::254. Checked at registration and again at delivery after DNS
 * resolution, and the connection then goes to the checked address (no second lookup a rebinding DNS server
 * could answer differently). Sandbox allows every address, so receivers on localhost work in development.
 */
export function guardsTargets(config: Pick<Config, 'LEDGER_ENVIRONMENT'>): boolean {
  return config.LEDGER_ENVIRONMENT === 'production';
}

/** The ipaddr.js range that makes `address` forbidden, or null when it is public unicast. */
export function forbiddenRange(address: string): string | null {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    // process() turns ::ffff:a.b.c.d into a.b.c.d, so a mapped loopback is judged as the loopback it is.
    parsed = ipaddr.process(address);
  } catch {
    return 'not an IP address';
  }
  // An allowlist of one range: everything ipaddr.js names (private, loopback, linkLocal, uniqueLocal,
  // unspecified, reserved, 6to4, teredo, ...) is refused; only plain unicast passes.
  const range = parsed.range();
  return range === 'unicast' ? null : range;
}

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

function refusal(addresses: LookupAddress[], host: string): TargetCheck | null {
  for (const { address } of addresses) {
    const range = forbiddenRange(address);
    if (range) return { ok: false, reason: `${host} resolves to ${address} (${range}), which webhooks may not reach in production` };
  }
  return null;
}

/**
 * At registration: literal addresses and local names are refused outright; a name that resolves to a
 * forbidden address is refused too. A name that does not resolve yet is accepted, because delivery checks
 * again after its own lookup.
 */
export async function checkTargetAtRegistration(config: Pick<Config, 'LEDGER_ENVIRONMENT'>, rawUrl: string): Promise<string | null> {
  if (!guardsTargets(config)) return null;
  const url = new URL(rawUrl);
  const host = hostOf(url);
  if (ipaddr.isValid(host)) {
    const range = forbiddenRange(host);
    return range ? `${host} is a ${range} address, which webhooks may not reach in production` : null;
  }
  if (isLocalName(host)) return `${host} is a local name, which webhooks may not reach in production`;
  let addresses: LookupAddress[];
  try {
    addresses = await resolveAll(host);
  } catch {
    return null;
  }
  const refused = refusal(addresses, host);
  return refused && !refused.ok ? refused.reason : null;
}

/**
 * At delivery: resolves the host once and judges every answer; any forbidden answer refuses the target (a
 * name pointing at both a public and a private address is not safe). In sandbox nothing is resolved here.
 */
export async function checkTargetAtDelivery(config: Pick<Config, 'LEDGER_ENVIRONMENT'>, url: URL): Promise<TargetCheck> {
  const host = hostOf(url);
  if (!guardsTargets(config)) return { ok: true, host, addresses: null };
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, reason: `${url.protocol} is not http or https` };
  const addresses = ipaddr.isValid(host)
    ? [{ address: host, family: ipaddr.parse(host).kind() === 'ipv4' ? 4 : 6 }]
    : await resolveAll(host);
  if (addresses.length === 0) return { ok: false, reason: `${host} has no addresses` };
  return refusal(addresses, host) ?? { ok: true, host, addresses };
}
