import ipaddr from 'ipaddr.js';

/**
 * Whether a webhook may reach an address, judged by what the address means rather than how it is spelled.
 * Every IPv6 form that carries an IPv4 address (mapped, compatible, translated, NAT64, 6to4, Teredo,
 * ISATAP) is judged by the IPv4 address it carries as well as by its own range, so `[::7f00:1]`,
 * `[64:ff9b::a9fe:a9fe]` or `[2002:a00:1::]` are refused like 127.0.0.1, 169.254.169.254 and 10.0.0.1.
 * Both families are allowlists at heart: IPv6 outside global unicast (2000::/3) is refused whole, and
 * ipaddr.js's own classification must also say `unicast`, so a range either list names is refused.
 */

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

function ranges(list: Array<[string, string]>): Array<{ cidr: Cidr; name: string }> {
  return list.map(([cidr, name]) => ({ cidr: ipaddr.parseCIDR(cidr), name }));
}

/** First match names the refusal, so narrower ranges come before the ranges holding them. */
const IPV4_REFUSED = ranges([
  ['0.0.0.0/8', 'unspecified ("this network")'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'carrier-grade NAT'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local (cloud metadata)'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'IETF protocol assignments'],
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', '6to4 relay anycast'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['255.255.255.255/32', 'broadcast'],
  ['240.0.0.0/4', 'reserved'],
]);

/** Judged before any IPv4 address they seem to carry: :: and ::1 are not 0.0.0.0 and 0.0.0.1 in meaning. */
const IPV6_EXACT = ranges([
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
]);

const IPV6_REFUSED = ranges([
  ['::/96', 'IPv4-compatible (deprecated)'],
  ['::ffff:0:0:0/96', 'IPv4-translated'],
  ['64:ff9b::/96', 'NAT64'],
  ['64:ff9b:1::/48', 'local-use NAT64'],
  ['100::/64', 'discard-only'],
  ['2001::/32', 'Teredo'],
  ['2001:2::/48', 'benchmarking'],
  ['2001::/23', 'IETF protocol assignments'],
  ['2001:db8::/32', 'documentation'],
  ['3fff::/20', 'documentation'],
  ['2002::/16', '6to4'],
  ['5f00::/16', 'segment routing'],
  ['fc00::/7', 'unique-local'],
  ['fec0::/10', 'site-local (deprecated)'],
  ['fe80::/10', 'link-local'],
  ['ff00::/8', 'multicast'],
]);

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');
const IPV4_MAPPED = ipaddr.parseCIDR('::ffff:0:0/96');

function firstMatch(address: ipaddr.IPv4 | ipaddr.IPv6, list: Array<{ cidr: Cidr; name: string }>): string | null {
  for (const { cidr, name } of list) {
    if (address.kind() === cidr[0].kind() && address.match(cidr)) return name;
  }
  return null;
}

function ipv4Of(bytes: number[]): ipaddr.IPv4 {
  return new ipaddr.IPv4(bytes);
}

/** The IPv4 addresses an IPv6 address carries, by the rule of each transition mechanism that embeds one. */
export function embeddedIpv4(address: ipaddr.IPv6): ipaddr.IPv4[] {
  const b = address.toByteArray();
  const prefix = (cidr: string) => address.match(ipaddr.parseCIDR(cidr));
  const found: ipaddr.IPv4[] = [];
  // Mapped, compatible, translated and well-known NAT64 all keep the IPv4 address in the last 32 bits.
  if (prefix('::ffff:0:0/96') || prefix('::/96') || prefix('::ffff:0:0:0/96') || prefix('64:ff9b::/96')) found.push(ipv4Of(b.slice(12)));
  // RFC 6052 with a /48 prefix: 16 bits, the reserved "u" octet, then the other 16.
  if (prefix('64:ff9b:1::/48')) found.push(ipv4Of([b[6]!, b[7]!, b[9]!, b[10]!]));
  if (prefix('2002::/16')) found.push(ipv4Of(b.slice(2, 6)));
  if (prefix('2001::/32')) {
    // Teredo: the server in bits 32-63, the client in the last 32 bits with every bit inverted.
    found.push(ipv4Of(b.slice(4, 8)), ipv4Of(b.slice(12).map((byte) => byte ^ 0xff)));
  }
  // ISATAP: an interface identifier of 0000:5efe or 0200:5efe (either u/g bits) then the IPv4 address.
  if ((b[8]! & 0xfc) === 0 && b[9] === 0 && b[10] === 0x5e && b[11] === 0xfe) found.push(ipv4Of(b.slice(12)));
  return found;
}

/**
 * An IPv6 literal with a dotted IPv4 tail, rewritten with hex groups: ipaddr.js reads `::1.2.3.4` as the
 * mapped ::ffff:1.2.3.4, which would judge the deprecated compatible form as the IPv4 address itself.
 */
function hexTail(text: string): string {
  const dotted = /^(.*:)(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (!dotted) return text;
  const octets = dotted.slice(2).map(Number);
  if (octets.some((octet) => octet > 255)) throw new Error('not an IPv4 tail');
  const group = (high: number, low: number) => ((high << 8) | low).toString(16);
  return `${dotted[1]}${group(octets[0]!, octets[1]!)}:${group(octets[2]!, octets[3]!)}`;
}

function parseAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 {
  if (text.includes(':')) return ipaddr.IPv6.parse(hexTail(text));
  // Any spelling inet_aton takes (127.1, 0177.0.0.1, 0x7f000001, 2130706433) is the address it means.
  return ipaddr.IPv4.parse(text);
}

function judgeIpv4(address: ipaddr.IPv4): string | null {
  return firstMatch(address, IPV4_REFUSED) ?? (address.range() === 'unicast' ? null : address.range());
}

/**
 * Why `text` may not be a webhook target, or null when it is a public unicast address. Anything that is
 * not an address, or carries a zone id (meaningful only on a local link), is refused.
 */
export function forbiddenRange(text: string): string | null {
  let address: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    if (text.includes('%')) return 'scoped (zone id)';
    address = parseAddress(text);
  } catch {
    return 'not an IP address';
  }
  if (address.kind() === 'ipv4') return judgeIpv4(address as ipaddr.IPv4);
  const v6 = address as ipaddr.IPv6;
  const exact = firstMatch(v6, IPV6_EXACT);
  if (exact) return exact;
  for (const carried of embeddedIpv4(v6)) {
    const refused = judgeIpv4(carried);
    if (refused) return `${refused}: it carries ${carried.toString()}`;
  }
  // A mapped address is the IPv4 address itself, on the wire and in meaning.
  if (v6.match(IPV4_MAPPED)) return null;
  const named = firstMatch(v6, IPV6_REFUSED);
  if (named) return named;
  if (!v6.match(GLOBAL_UNICAST_V6)) return 'reserved';
  return v6.range() === 'unicast' ? null : v6.range();
}
