/**
 * SPEC §12 webhook targets in production, judged by meaning (docs/webhook-security.md): every spelling of
 * every refused range is refused at registration and at delivery, and public addresses stay allowed.
 */
import type { LookupAddress } from 'node:dns';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { loadConfig } from '../src/config';
import { postWebhook } from '../src/webhooks/http';
import { createWebhookBody } from '../src/webhooks/schemas';
import { checkTargetAtDelivery, checkTargetAtRegistration, type Resolver } from '../src/webhooks/ssrf';
import { apiClient, createTestOrg, startStack, type Stack } from './support/harness';

const PRODUCTION = { LEDGER_ENVIRONMENT: 'production' as const };

/** A refused range: the bytes of its prefix and the prefix's length in bits. */
interface RefusedRange {
  name: string;
  prefix: number[];
  bits: number;
}

const IPV4_RANGES: RefusedRange[] = [
  ['0.0.0.0/8', 'this network'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'CGNAT'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['169.254.169.254/32', 'metadata'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'IETF'],
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', '6to4 relay'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
  ['255.255.255.255/32', 'broadcast'],
].map(([cidr, name]) => {
  const [address, bits] = cidr!.split('/');
  return { name: `${name} ${cidr}`, prefix: address!.split('.').map(Number), bits: Number(bits) };
});

function v6Prefix(cidr: string): RefusedRange {
  const [address, bits] = ipaddr.parseCIDR(cidr);
  return { name: cidr, prefix: address.toByteArray(), bits };
}

const IPV6_RANGES: RefusedRange[] = [
  '::/128',
  'fc00::/7',
  'fd00:ec2::/32',
  'fe80::/10',
  'fec0::/10',
  'ff00::/8',
  '2001:db8::/32',
  '3fff::/20',
  '2001:2::/48',
  '2001::/23',
  '100::/64',
  '5f00::/16',
  '64:ff9b:1::/48',
  '2002::/16',
  '2001::/32',
  '::/3',
  '4000::/2',
  '8000::/1',
].map(v6Prefix);

/** Bytes of a random address in the range: the prefix's bits kept, the rest drawn. */
function addressIn(range: RefusedRange, length: number): fc.Arbitrary<number[]> {
  return fc.uint8Array({ minLength: length, maxLength: length }).map((random) =>
    Array.from(random, (byte, i) => {
      const keep = Math.max(0, Math.min(8, range.bits - i * 8));
      const mask = (0xff << (8 - keep)) & 0xff;
      return ((range.prefix[i] ?? 0) & mask) | (byte & ~mask & 0xff);
    }),
  );
}

type Case = 'lower' | 'upper' | 'mixed';

function withCase(text: string, style: Case, seed: number): string {
  if (style === 'lower') return text.toLowerCase();
  if (style === 'upper') return text.toUpperCase();
  return Array.from(text, (char, i) => ((seed >> (i % 30)) & 1 ? char.toUpperCase() : char.toLowerCase())).join('');
}

/** One IPv4 part in decimal, octal (leading 0) or hex (0x), as inet_aton and WHATWG URL read them. */
function part(value: number, radix: 'dec' | 'oct' | 'hex', zeros: number): string {
  if (radix === 'oct') return `0${'0'.repeat(zeros)}${value.toString(8)}`;
  if (radix === 'hex') return `0x${'0'.repeat(zeros)}${value.toString(16)}`;
  return String(value);
}

/** Spellings of an IPv4 address: 4, 3, 2 or 1 parts, each in its own radix, any case, maybe a trailing dot. */
const ipv4Spelling = (bytes: number[]) =>
  fc
    .record({
      parts: fc.constantFrom(4, 3, 2, 1),
      radixes: fc.array(fc.constantFrom('dec' as const, 'oct' as const, 'hex' as const), { minLength: 4, maxLength: 4 }),
      zeros: fc.nat(2),
      style: fc.constantFrom<Case>('lower', 'upper', 'mixed'),
      seed: fc.nat(),
      dot: fc.boolean(),
    })
    .map(({ parts, radixes, zeros, style, seed, dot }) => {
      const value = ((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0;
      const leading = bytes.slice(0, parts - 1);
      const rest = value % 2 ** (8 * (5 - parts));
      const text = [...leading, rest].map((n, i) => part(n, radixes[i]!, zeros)).join('.');
      return { host: withCase(text, style, seed) + (dot ? '.' : ''), literal: text };
    });

/** Spellings of an IPv6 address: any zero run compressed or none, padded or not, any case, maybe a dotted tail. */
const ipv6Spelling = (bytes: number[]) =>
  fc
    .record({
      compress: fc.nat(8),
      pad: fc.boolean(),
      dottedTail: fc.boolean(),
      style: fc.constantFrom<Case>('lower', 'upper', 'mixed'),
      seed: fc.nat(),
    })
    .map(({ compress, pad, dottedTail, style, seed }) => {
      const groups = Array.from({ length: 8 }, (_, i) => (bytes[2 * i]! << 8) | bytes[2 * i + 1]!);
      const texts = groups.map((group) => (pad ? group.toString(16).padStart(4, '0') : group.toString(16)));
      const tail = dottedTail ? [bytes.slice(12).join('.')] : texts.slice(6);
      const head = texts.slice(0, 6);
      const all = [...head, ...tail];
      // Compress the zero run that starts at the first zero group at or after `compress`, if any.
      const width = dottedTail ? 7 : 8;
      const zeroAt = (i: number) => (i < 6 && groups[i] === 0) || (!dottedTail && i >= 6 && groups[i] === 0);
      let start = -1;
      for (let i = compress; i < width && start < 0; i++) if (zeroAt(i)) start = i;
      let text = all.join(':');
      if (start >= 0) {
        let end = start;
        while (end + 1 < width && zeroAt(end + 1)) end++;
        text = `${all.slice(0, start).join(':')}::${all.slice(end + 1).join(':')}`;
      }
      return withCase(text, style, seed);
    });

function bytesOfV6(groups: number[]): number[] {
  return groups.flatMap((group) => [group >> 8, group & 0xff]);
}

/** Every IPv6 form that carries an IPv4 address, built around it. */
function embeddings(v4: number[]): fc.Arbitrary<{ form: string; bytes: number[] }> {
  const [a, b, c, d] = v4 as [number, number, number, number];
  const hi = (a << 8) | b;
  const lo = (c << 8) | d;
  return fc.record({ random: fc.array(fc.nat(0xffff), { minLength: 8, maxLength: 8 }), which: fc.nat(8) }).map(({ random, which }) => {
    const forms: Array<[string, number[]]> = [
      ['mapped', [0, 0, 0, 0, 0, 0xffff, hi, lo]],
      ['compatible', [0, 0, 0, 0, 0, 0, hi, lo]],
      ['translated', [0, 0, 0, 0, 0xffff, 0, hi, lo]],
      ['NAT64', [0x64, 0xff9b, 0, 0, 0, 0, hi, lo]],
      ['local NAT64', [0x64, 0xff9b, 1, hi, c, d << 8, random[6]!, random[7]!]],
      ['6to4', [0x2002, hi, lo, random[3]!, random[4]!, random[5]!, random[6]!, random[7]!]],
      ['Teredo client', [0x2001, 0, random[2]!, random[3]!, random[4]!, random[5]!, hi ^ 0xffff, lo ^ 0xffff]],
      ['Teredo server', [0x2001, 0, hi, lo, random[4]!, random[5]!, random[6]!, random[7]!]],
      ['ISATAP', [0x2600 | (random[0]! & 0xff), random[1]!, random[2]!, random[3]!, random[4]! & 0x0200, 0x5efe, hi, lo]],
    ];
    const [form, groups] = forms[which]!;
    return { form, bytes: bytesOfV6(groups) };
  });
}

interface Spelling {
  range: string;
  /** How a URL writes the host. */
  host: string;
  /** The same address as a resolver could answer it (zone ids included). */
  resolved: LookupAddress;
}

const ipv4Cases: fc.Arbitrary<Spelling> = fc
  .constantFrom(...IPV4_RANGES)
  .chain((range) => addressIn(range, 4).chain((bytes) => ipv4Spelling(bytes).map((spelled) => ({ range, bytes, spelled }))))
  .map(({ range, spelled }) => ({ range: `IPv4 ${range.name}`, host: spelled.host, resolved: { address: spelled.literal, family: 4 } }));

const embeddedCases: fc.Arbitrary<Spelling> = fc
  .constantFrom(...IPV4_RANGES)
  .chain((range) => addressIn(range, 4).map((bytes) => ({ range, bytes })))
  .chain(({ range, bytes }) => embeddings(bytes).map((embedded) => ({ range, embedded })))
  .chain(({ range, embedded }) =>
    ipv6Spelling(embedded.bytes).map((text) => ({
      range: `${embedded.form} of IPv4 ${range.name}`,
      host: `[${text}]`,
      resolved: { address: text, family: 6 },
    })),
  );

const ipv6Cases: fc.Arbitrary<Spelling> = fc
  .constantFrom(...IPV6_RANGES, v6Prefix('::1/128'))
  .chain((range) => addressIn(range, 16).chain((bytes) => ipv6Spelling(bytes).map((text) => ({ range, text }))))
  .map(({ range, text }) => ({ range: `IPv6 ${range.name}`, host: `[${text}]`, resolved: { address: text, family: 6 } }));

/** A zone id makes any address local to one link: WHATWG URL refuses it in a host, the check refuses it resolved. */
const zonedCases: fc.Arbitrary<Spelling> = fc
  .tuple(fc.oneof(ipv6Cases, embeddedCases), fc.constantFrom('eth0', '1', 'lo', 'en0'))
  .map(([spelling, zone]) => ({
    range: `${spelling.range} with zone id`,
    host: `${spelling.host.slice(0, -1)}%25${zone}]`,
    resolved: { address: `${spelling.resolved.address}%${zone}`, family: 6 },
  }));

const refusedSpellings = fc.oneof(
  { arbitrary: ipv4Cases, weight: 3 },
  { arbitrary: embeddedCases, weight: 4 },
  { arbitrary: ipv6Cases, weight: 3 },
  { arbitrary: zonedCases, weight: 1 },
);

const SPELLINGS_MIN = 12_000;

/** What POST /webhook does with a url before anything is stored: the body schema, then the production check. */
async function registrationRefuses(url: string, resolve: Resolver): Promise<boolean> {
  const parsed = createWebhookBody.safeParse({ url });
  if (!parsed.success) return true;
  return (await checkTargetAtRegistration(PRODUCTION, url, resolve)) !== null;
}

const unresolvable: Resolver = () => Promise.reject(Object.assign(new Error('no such name'), { code: 'ENOTFOUND' }));

/** Public addresses, many just outside a refused range: none may be refused. */
const PUBLIC_ADDRESSES = [
  '1.1.1.1',
  '8.8.8.8',
  '9.9.9.9',
  '93.184.215.14',
  '1.0.0.1',
  '11.0.0.1',
  '9.255.255.255',
  '100.63.255.255',
  '100.128.0.0',
  '126.255.255.255',
  '128.0.0.1',
  '169.253.255.255',
  '169.255.0.1',
  '172.15.255.255',
  '172.32.0.1',
  '192.0.1.1',
  '192.0.3.1',
  '192.88.98.1',
  '192.88.100.1',
  '192.167.255.255',
  '192.169.0.1',
  '198.17.255.255',
  '198.20.0.1',
  '198.51.99.1',
  '198.51.101.1',
  '203.0.112.1',
  '203.0.114.1',
  '223.255.255.254',
  '2606:4700:4700::1111',
  '2001:4860:4860::8888',
  '2620:fe::fe',
  '2a00:1450:4001:82b::200e',
  '2400:cb00:2048:1::c629:d7a2',
  '2003::1',
  '2001:200::1',
  '2001:db9::1',
  '3fff:1000::1',
  '2c0f:fb50:4003::1',
  '::ffff:8.8.8.8',
  '::ffff:93.184.215.14',
];

const hostOfAddress = (address: string) => (address.includes(':') ? `[${address}]` : address);

describe('SPEC §12 webhook targets: refused by meaning, in every spelling', () => {
  test(`${SPELLINGS_MIN} generated spellings of refused ranges: every one refused at registration and at delivery`, async () => {
    const seenRanges = new Set<string>();
    let generated = 0;
    let acceptedAtRegistration = 0;
    let acceptedAtDelivery = 0;
    await fc.assert(
      fc.asyncProperty(refusedSpellings, fc.constantFrom('http', 'https'), async (spelling, scheme) => {
        generated++;
        seenRanges.add(spelling.range.replace(/ with zone id$/, ''));
        const url = `${scheme}://${spelling.host}:8443/hooks`;
        if (!(await registrationRefuses(url, unresolvable))) acceptedAtRegistration++;
        // At delivery the name resolves to the spelled address, as a rebinding DNS server would answer.
        const check = await checkTargetAtDelivery(PRODUCTION, new URL(`${scheme}://hooks.example.test/`), async () => [spelling.resolved]);
        if (check.ok) acceptedAtDelivery++;
        return !check.ok;
      }),
      { numRuns: SPELLINGS_MIN },
    );
    expect({ generated, acceptedAtRegistration, acceptedAtDelivery }).toEqual({
      generated: SPELLINGS_MIN,
      acceptedAtRegistration: 0,
      acceptedAtDelivery: 0,
    });
    // Every range and every embedding was drawn (the generator covers them all, not a lucky few).
    expect(seenRanges.size).toBeGreaterThanOrEqual(IPV4_RANGES.length * 10 + IPV6_RANGES.length);
  }, 120_000);

  test.each([
    'http://[::127.0.0.1]/',
    'http://[::7f00:1]/',
    'http://[0:0:0:0:0:0:7f00:1]/',
    'http://[::a9fe:a9fe]/',
    'http://[::169.254.169.254]/',
    'http://[::a00:1]/',
    'http://[::2]/',
    'http://[::0.0.0.2]/',
  ])('the IPv4-compatible form %s is refused', async (url) => {
    expect(await registrationRefuses(url, unresolvable)).toBe(true);
  });

  test.each(PUBLIC_ADDRESSES)('the public address %s stays allowed at registration and at delivery', async (address) => {
    expect(await checkTargetAtRegistration(PRODUCTION, `https://${hostOfAddress(address)}/hooks`, unresolvable)).toBeNull();
    const family = address.includes(':') ? 6 : 4;
    const check = await checkTargetAtDelivery(PRODUCTION, new URL('https://hooks.example.test/'), async () => [{ address, family }]);
    expect(check).toEqual({ ok: true, host: 'hooks.example.test', addresses: [{ address, family }] });
  });

  test('a name that resolved to a public address at registration and to a private one at delivery is refused then', async () => {
    const answers = [[{ address: '93.184.215.14', family: 4 }], [{ address: '::ffff:10.0.0.7', family: 6 }]];
    const rebinding: Resolver = async () => answers.shift()!;
    expect(await checkTargetAtRegistration(PRODUCTION, 'https://rebind.example.test/hooks', rebinding)).toBeNull();
    const check = await checkTargetAtDelivery(PRODUCTION, new URL('https://rebind.example.test/hooks'), rebinding);
    expect(check).toEqual({ ok: false, reason: expect.stringContaining('10.0.0.7') });
  });

  test('a name with one public and one private answer is refused: any forbidden answer refuses the target', async () => {
    const mixed: Resolver = async () => [
      { address: '93.184.215.14', family: 4 },
      { address: 'fd00:ec2::254', family: 6 },
    ];
    expect(await checkTargetAtRegistration(PRODUCTION, 'https://mixed.example.test/hooks', mixed)).toMatch(/fd00:ec2::254/);
    expect((await checkTargetAtDelivery(PRODUCTION, new URL('https://mixed.example.test/hooks'), mixed)).ok).toBe(false);
  });

  test('the connection goes only to the checked addresses: a name nobody resolves reaches the pinned one', async () => {
    const server = http.createServer((_req, res) => res.end('{}'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      // .invalid never resolves (RFC 6761): only the pinned lookup can have sent the request to 127.0.0.1.
      const status = await postWebhook(
        new URL(`http://pinned.invalid:${port}/hooks`),
        '{}',
        {},
        { pinned: [{ address: '127.0.0.1', family: 4 }] },
      );
      expect(status).toBe(200);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test('sandbox judges nothing, so receivers on localhost work in development', async () => {
    const sandbox = loadConfig({});
    expect(await checkTargetAtRegistration(sandbox, 'http://127.0.0.1/hooks', unresolvable)).toBeNull();
    expect(await checkTargetAtDelivery(sandbox, new URL('http://[::1]/hooks'))).toMatchObject({ ok: true, addresses: null });
  });
});

describe('SPEC §12 webhook targets through POST /webhook on a production stack', () => {
  let stack: Stack;
  let call: ReturnType<typeof apiClient>;
  beforeAll(async () => {
    stack = await startStack({ env: PRODUCTION, worker: false });
    const org = await createTestOrg(stack.pool, { environment: 'production', write: 100_000, read: 100_000 });
    call = apiClient(stack.url, org.apiKey);
  });
  afterAll(async () => {
    await stack.stop();
  });

  test('a sample of 300 generated refused spellings: every one 400 validation_failed on url, nothing stored', async () => {
    const statuses: number[] = [];
    await fc.assert(
      fc.asyncProperty(refusedSpellings, async (spelling) => {
        const response = await call('POST', '/webhook', { url: `https://${spelling.host}/hooks` });
        statuses.push(response.status);
        return response.status === 400 && response.body.error.param === 'url' && response.body.error.code === 'validation_failed';
      }),
      { numRuns: 300 },
    );
    expect(statuses.filter((status) => status !== 400)).toEqual([]);
    expect((await call('GET', '/webhook')).body.data).toEqual([]);
  }, 120_000);

  test('every public address of the table is accepted (and deleted again, under the endpoint limit)', async () => {
    const refused: string[] = [];
    for (const address of PUBLIC_ADDRESSES) {
      const response = await call('POST', '/webhook', { url: `https://${hostOfAddress(address)}/hooks` });
      if (response.status !== 200) refused.push(`${address}: ${response.text}`);
      else expect((await call('DELETE', `/webhook/${response.body.id}`)).status).toBe(200);
    }
    expect(refused).toEqual([]);
  }, 60_000);
});
