import { execFile } from 'node:child_process';
import path from 'node:path';
import { Writable } from 'node:stream';
import { InvalidRequestError, Ledger, type LedgerError, type Schemas } from '@payments-ledger/sdk';
import pino from 'pino';
import { withTransaction } from '../src/db/pool';
import { ApiError } from '../src/errors';
import { randomString } from '../src/ids';
import { REDACT_PATHS } from '../src/logger';
import { getUserStatus } from '../src/users/repo';
import type { UserStatus } from '../src/users/schemas';
import { changeUserStatus } from '../src/users/service';
import { apiClient, createTestOrg, createTestUser, startStack, testInfra, type Stack, type TestOrg } from './support/harness';
import { exampleMismatches, expectDocumented } from './support/openapi';
import { userBody, type Body } from './support/payments';

/** A POST /user body for the SDK (userBody builds it loosely typed, so invalid ones can be built too). */
const sdkUser = (patch?: (body: Body) => void) => userBody(patch) as Schemas['UserCreateRequest'];

function isoDate(offsetDays: number): string {
  return new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);
}

let stack: Stack;
/** KYC required (the default), generous limits: these suites send hundreds of writes. */
let org: TestOrg;
let call: ReturnType<typeof apiClient>;
/** The SDK for the same organization: the KYC, read and paging suites below use it instead of raw fetch. */
let ledger: Ledger;

beforeAll(async () => {
  stack = await startStack({ worker: false });
  org = await createTestOrg(stack.pool, { write: 100_000, read: 100_000 });
  call = apiClient(stack.url, org.apiKey);
  ledger = new Ledger({ apiKey: org.apiKey, baseUrl: stack.url });
});
afterAll(async () => {
  await stack.stop();
});

async function rowsWithTag(organizationId: string, tag: string): Promise<number> {
  const { rows } = await stack.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM users WHERE organization_id = $1 AND tag = $2`, [
    organizationId,
    tag,
  ]);
  return rows[0]!.n;
}

async function eventsFor(userId: string): Promise<Array<{ type: string; data: Body }>> {
  const { rows } = await stack.pool.query<{ type: string; data: Body }>(
    `SELECT type, data FROM events WHERE data->>'id' = $1 ORDER BY seq`,
    [userId],
  );
  return rows;
}

describe('SPEC §6 users: POST /user validates every field', () => {
  const valid: Array<[string, (body: Body) => void]> = [
    [
      'the required fields alone (no address_line_2, phone_number or tag)',
      (b) => {
        delete b.tag;
        b.email = `only-${randomString(8)}@example.com`;
      },
    ],
    [
      'an address_line_2',
      (b) => {
        b.address.address_line_2 = 'Apt 4B';
      },
    ],
    [
      'a null address_line_2',
      (b) => {
        b.address.address_line_2 = null;
      },
    ],
    [
      'a non-US address with a free-form region and postal code',
      (b) => {
        b.address = {
          address_line_1: '10 Downing St',
          locality: 'London',
          administrative_area: 'Greater London',
          postal_code: 'SW1A 2AA',
          country: 'GB',
        };
      },
    ],
    [
      'a US territory code (PR)',
      (b) => {
        b.address.administrative_area = 'PR';
        b.address.postal_code = '00901';
      },
    ],
    [
      'the District of Columbia',
      (b) => {
        b.address.administrative_area = 'DC';
        b.address.postal_code = '20500';
      },
    ],
    [
      'a US ZIP+4 postal code',
      (b) => {
        b.address.postal_code = '07102-1234';
      },
    ],
    [
      'a leap day date of birth',
      (b) => {
        b.date_of_birth = '2000-02-29';
      },
    ],
    [
      'yesterday as date of birth',
      (b) => {
        b.date_of_birth = isoDate(-1);
      },
    ],
    [
      'a passport without state',
      (b) => {
        b.government_id = { type: 'passport', last4: '0000' };
      },
    ],
    [
      'a military_id without state',
      (b) => {
        b.government_id = { type: 'military_id', last4: '1234' };
      },
    ],
    [
      'an ssn without state',
      (b) => {
        b.government_id = { type: 'ssn', last4: '9876' };
      },
    ],
    [
      'a drivers_license with its state',
      (b) => {
        b.government_id = { type: 'drivers_license', last4: '1234', state: 'NJ' };
      },
    ],
    [
      'a state_id with its state',
      (b) => {
        b.government_id = { type: 'state_id', last4: '1234', state: 'NY' };
      },
    ],
    [
      'an E.164 phone number',
      (b) => {
        b.phone_number = '+12015550123';
      },
    ],
    [
      'a 15-digit E.164 phone number',
      (b) => {
        b.phone_number = '+442071234567890';
      },
    ],
    [
      'a tag of 255 characters',
      (b) => {
        b.tag = `t${randomString(254)}`;
      },
    ],
    [
      'a one-character tag',
      (b) => {
        b.tag = String.fromCodePoint(0x4e00 + Math.floor(Math.random() * 20_000));
      },
    ],
    [
      'names of 100 characters',
      (b) => {
        b.name = { first: 'A'.repeat(100), last: 'B'.repeat(100) };
      },
    ],
  ];
  test.each(valid)('accepts %s', async (_what, patch) => {
    const body = userBody(patch);
    const response = await call('POST', '/user', body);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ id: expect.stringMatching(/^user_[A-Za-z0-9]{16,}$/) });
  });

  const invalid: Array<[string, string, (body: Body) => void]> = [
    [
      'name missing',
      'name',
      (b) => {
        delete b.name;
      },
    ],
    [
      'name.first missing',
      'name.first',
      (b) => {
        delete b.name.first;
      },
    ],
    [
      'name.first blank',
      'name.first',
      (b) => {
        b.name.first = '   ';
      },
    ],
    [
      'name.last over 100 characters',
      'name.last',
      (b) => {
        b.name.last = 'x'.repeat(101);
      },
    ],
    [
      'name.last with a control character',
      'name.last',
      (b) => {
        b.name.last = 'Love\u0000lace';
      },
    ],
    [
      'address missing',
      'address',
      (b) => {
        delete b.address;
      },
    ],
    [
      'address.address_line_1 missing',
      'address.address_line_1',
      (b) => {
        delete b.address.address_line_1;
      },
    ],
    [
      'address.address_line_2 empty',
      'address.address_line_2',
      (b) => {
        b.address.address_line_2 = '';
      },
    ],
    [
      'address.locality missing',
      'address.locality',
      (b) => {
        delete b.address.locality;
      },
    ],
    [
      'address.administrative_area missing',
      'address.administrative_area',
      (b) => {
        delete b.address.administrative_area;
      },
    ],
    [
      'address.postal_code missing',
      'address.postal_code',
      (b) => {
        delete b.address.postal_code;
      },
    ],
    [
      'address.country missing',
      'address.country',
      (b) => {
        delete b.address.country;
      },
    ],
    [
      'address.country alpha-3',
      'address.country',
      (b) => {
        b.address.country = 'USA';
      },
    ],
    [
      'address.country in lower case',
      'address.country',
      (b) => {
        b.address.country = 'us';
      },
    ],
    [
      'address.country not assigned (XX)',
      'address.country',
      (b) => {
        b.address.country = 'XX';
      },
    ],
    [
      'a US state written out',
      'address.administrative_area',
      (b) => {
        b.address.administrative_area = 'New Jersey';
      },
    ],
    [
      'a US state code that does not exist',
      'address.administrative_area',
      (b) => {
        b.address.administrative_area = 'XX';
      },
    ],
    [
      'a US postal code of 4 digits',
      'address.postal_code',
      (b) => {
        b.address.postal_code = '0710';
      },
    ],
    [
      'a US postal code of 6 digits',
      'address.postal_code',
      (b) => {
        b.address.postal_code = '071021';
      },
    ],
    [
      'a US postal code with a short +4',
      'address.postal_code',
      (b) => {
        b.address.postal_code = '07102-12';
      },
    ],
    [
      'a US postal code with letters',
      'address.postal_code',
      (b) => {
        b.address.postal_code = 'SW1A 2AA';
      },
    ],
    [
      'email missing',
      'email',
      (b) => {
        delete b.email;
      },
    ],
    [
      'email without a domain',
      'email',
      (b) => {
        b.email = 'ada@';
      },
    ],
    [
      'email that is not one',
      'email',
      (b) => {
        b.email = 'not-an-email';
      },
    ],
    [
      'email over 254 characters',
      'email',
      (b) => {
        b.email = `${'a'.repeat(250)}@example.com`;
      },
    ],
    [
      'date_of_birth missing',
      'date_of_birth',
      (b) => {
        delete b.date_of_birth;
      },
    ],
    [
      'date_of_birth not zero-padded',
      'date_of_birth',
      (b) => {
        b.date_of_birth = '1990-1-1';
      },
    ],
    [
      'date_of_birth with month 13',
      'date_of_birth',
      (b) => {
        b.date_of_birth = '1990-13-01';
      },
    ],
    [
      'date_of_birth 29 February of a common year',
      'date_of_birth',
      (b) => {
        b.date_of_birth = '2023-02-29';
      },
    ],
    [
      'date_of_birth 31 April',
      'date_of_birth',
      (b) => {
        b.date_of_birth = '1990-04-31';
      },
    ],
    [
      'date_of_birth today',
      'date_of_birth',
      (b) => {
        b.date_of_birth = isoDate(0);
      },
    ],
    [
      'date_of_birth tomorrow',
      'date_of_birth',
      (b) => {
        b.date_of_birth = isoDate(1);
      },
    ],
    [
      'date_of_birth before 1900',
      'date_of_birth',
      (b) => {
        b.date_of_birth = '1850-01-01';
      },
    ],
    [
      'date_of_birth with a time',
      'date_of_birth',
      (b) => {
        b.date_of_birth = '1990-12-10T00:00:00Z';
      },
    ],
    [
      'government_id missing',
      'government_id',
      (b) => {
        delete b.government_id;
      },
    ],
    [
      'government_id.type not in the list',
      'government_id.type',
      (b) => {
        b.government_id.type = 'national_id';
      },
    ],
    [
      'government_id.type missing',
      'government_id.type',
      (b) => {
        delete b.government_id.type;
      },
    ],
    [
      'government_id.last4 of three digits',
      'government_id.last4',
      (b) => {
        b.government_id.last4 = '123';
      },
    ],
    [
      'government_id.last4 of five digits',
      'government_id.last4',
      (b) => {
        b.government_id.last4 = '12345';
      },
    ],
    [
      'government_id.last4 with letters',
      'government_id.last4',
      (b) => {
        b.government_id.last4 = '12a4';
      },
    ],
    [
      'government_id.last4 as a number',
      'government_id.last4',
      (b) => {
        b.government_id.last4 = 1234;
      },
    ],
    [
      'a drivers_license without state',
      'government_id.state',
      (b) => {
        b.government_id = { type: 'drivers_license', last4: '1234' };
      },
    ],
    [
      'a state_id without state',
      'government_id.state',
      (b) => {
        b.government_id = { type: 'state_id', last4: '1234' };
      },
    ],
    [
      'a state_id with a null state',
      'government_id.state',
      (b) => {
        b.government_id = { type: 'state_id', last4: '1234', state: null };
      },
    ],
    [
      'identity_verified missing',
      'identity_verified',
      (b) => {
        delete b.identity_verified;
      },
    ],
    [
      'identity_verified as a string',
      'identity_verified',
      (b) => {
        b.identity_verified = 'true';
      },
    ],
    [
      'phone_number without +',
      'phone_number',
      (b) => {
        b.phone_number = '12015550123';
      },
    ],
    [
      'phone_number with a leading zero',
      'phone_number',
      (b) => {
        b.phone_number = '+012015550123';
      },
    ],
    [
      'phone_number of 16 digits',
      'phone_number',
      (b) => {
        b.phone_number = '+1234567890123456';
      },
    ],
    [
      'phone_number with spaces',
      'phone_number',
      (b) => {
        b.phone_number = '+1 201 555 0123';
      },
    ],
    [
      'tag empty',
      'tag',
      (b) => {
        b.tag = '';
      },
    ],
    [
      'tag of 256 characters',
      'tag',
      (b) => {
        b.tag = `t${randomString(255)}`;
      },
    ],
    [
      'tag as a number',
      'tag',
      (b) => {
        b.tag = 42;
      },
    ],
    [
      'a field the API does not know',
      '(body)',
      (b) => {
        b.phone = '+12015550123';
      },
    ],
    [
      'an unknown member of address',
      'address',
      (b) => {
        b.address.street = 'Main';
      },
    ],
  ];
  test.each(invalid)('refuses %s with 400 validation_failed naming %s', async (_what, param, patch) => {
    const body = userBody(patch);
    const response = await call('POST', '/user', body);
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ type: 'invalid_request_error', code: 'validation_failed', param });
    expect(new Set(response.body.error.details.map((detail: { param: string }) => detail.param))).toEqual(new Set([param]));
    if (typeof body.tag === 'string' && body.tag.length >= 1 && body.tag.length <= 255)
      expect(await rowsWithTag(org.organizationId, body.tag)).toBe(0);
  });

  test('reports every bad field at once, one details entry each', async () => {
    const response = await call(
      'POST',
      '/user',
      userBody((b) => {
        b.name.first = '';
        b.address.postal_code = '1';
        b.address.locality = '';
        b.date_of_birth = '2023-02-29';
        b.government_id = { type: 'drivers_license', last4: 'abcd' };
        b.phone_number = 'call me';
      }),
    );
    expect(response.status).toBe(400);
    expect(response.body.error.details.map((detail: { param: string }) => detail.param).sort()).toEqual([
      'address.locality',
      'address.postal_code',
      'date_of_birth',
      'government_id.last4',
      'government_id.state',
      'name.first',
      'phone_number',
    ]);
  });

  test('a validation failure stores nothing: the corrected request with the same tag creates the user', async () => {
    const tag = `fix-${randomString(12)}`;
    const bad = await call(
      'POST',
      '/user',
      userBody((b) => {
        b.tag = tag;
        b.email = 'nope';
      }),
    );
    expect(bad.status).toBe(400);
    const good = await call(
      'POST',
      '/user',
      userBody((b) => {
        b.tag = tag;
      }),
    );
    expect(good.status).toBe(200);
    expect(good.headers.get('idempotent-replayed')).toBeNull();
  });
});

describe('SPEC §6 users: KYC requirement', () => {
  test('with KYC required (the default), identity_verified false answers 400 identity_not_verified and creates nothing', async () => {
    const body = userBody((b) => {
      b.identity_verified = false;
    });
    const error = await ledger.users.create(body as Schemas['UserCreateRequest']).catch((e: unknown) => e as LedgerError);
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect(error).toMatchObject({ status: 400, type: 'invalid_request_error', code: 'identity_not_verified', param: 'identity_verified' });
    expect(await rowsWithTag(org.organizationId, body.tag)).toBe(0);
  });

  test('with KYC required, a verified user is created enabled', async () => {
    const created = await ledger.users.create(sdkUser());
    expect((await ledger.users.retrieve(created.id)).status).toBe('enabled');
  });

  test('with KYC off, an unverified user is created in status created and a verified one enabled', async () => {
    const relaxed = await createTestOrg(stack.pool, { kycRequired: false });
    const relaxedLedger = new Ledger({ apiKey: relaxed.apiKey, baseUrl: stack.url });
    const unverified = await relaxedLedger.users.create(
      sdkUser((b) => {
        b.identity_verified = false;
      }),
    );
    expect(await relaxedLedger.users.retrieve(unverified.id)).toMatchObject({ status: 'created', identity_verified: false });
    const verified = await relaxedLedger.users.create(sdkUser());
    expect(await relaxedLedger.users.retrieve(verified.id)).toMatchObject({ status: 'enabled', identity_verified: true });
  });
});

describe('SPEC §6 users: tag is unique per organization and makes creation idempotent', () => {
  test('a repeated tag replays the original id and creates nothing (sequential)', async () => {
    const body = userBody();
    const first = await call('POST', '/user', body);
    const second = await call('POST', '/user', body);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(await rowsWithTag(org.organizationId, body.tag)).toBe(1);
    expect((await eventsFor(first.body.id)).map((event) => event.type)).toEqual(['user.created']);
  });

  test('a repeated tag with a different body still answers the original id', async () => {
    const tag = `tag-${randomString(16)}`;
    const first = await call(
      'POST',
      '/user',
      userBody((b) => {
        b.tag = tag;
      }),
    );
    const second = await call(
      'POST',
      '/user',
      userBody((b) => {
        b.tag = tag;
        b.email = 'someone.else@example.com';
        b.name.first = 'Grace';
      }),
    );
    expect(second.body).toEqual(first.body);
    expect(await rowsWithTag(org.organizationId, tag)).toBe(1);
  });

  test('a repeated tag under different X-Idempotency-Keys is a duplicate and replays the original', async () => {
    const body = userBody();
    const first = await call('POST', '/user', body, { 'X-Idempotency-Key': `a-${randomString(10)}` });
    const second = await call('POST', '/user', body, { 'X-Idempotency-Key': `b-${randomString(10)}` });
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(await rowsWithTag(org.organizationId, body.tag)).toBe(1);
  });

  test('a repeated tag after the 24-hour idempotency window still answers the original id and creates nothing', async () => {
    const later = await startStack({ worker: false, clock: { now: () => new Date(Date.now() + 25 * 3_600_000) } });
    try {
      const body = userBody();
      const first = await call('POST', '/user', body);
      const again = await apiClient(later.url, org.apiKey)('POST', '/user', body);
      expect(again.status).toBe(200);
      // It executed (the idempotency record had expired) and found the user by its tag.
      expect(again.headers.get('idempotent-replayed')).toBeNull();
      expect(again.body).toEqual(first.body);
      expect(await rowsWithTag(org.organizationId, body.tag)).toBe(1);
      expect((await eventsFor(first.body.id)).map((event) => event.type)).toEqual(['user.created']);
    } finally {
      await later.stop();
    }
  });

  test('50 concurrent identical requests create exactly one user and all answer its id', async () => {
    const body = userBody();
    const responses = await Promise.all(Array.from({ length: 50 }, () => call('POST', '/user', body)));
    expect(responses.map((response) => response.status)).toEqual(Array(50).fill(200));
    expect(new Set(responses.map((response) => response.body.id)).size).toBe(1);
    expect(await rowsWithTag(org.organizationId, body.tag)).toBe(1);
    expect(await eventsFor(responses[0]!.body.id)).toHaveLength(1);
  });

  test('50 concurrent requests with one tag but distinct X-Idempotency-Keys create exactly one user', async () => {
    const body = userBody();
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, i) => call('POST', '/user', body, { 'X-Idempotency-Key': `race-${i}-${randomString(8)}` })),
    );
    expect(responses.map((response) => response.status)).toEqual(Array(50).fill(200));
    expect(new Set(responses.map((response) => response.body.id)).size).toBe(1);
    expect(await rowsWithTag(org.organizationId, body.tag)).toBe(1);
    expect(await eventsFor(responses[0]!.body.id)).toHaveLength(1);
  });

  test('the same tag in another organization is another user', async () => {
    const other = await createTestOrg(stack.pool);
    const body = userBody();
    const mine = await call('POST', '/user', body);
    const theirs = await apiClient(stack.url, other.apiKey)('POST', '/user', body);
    expect(theirs.status).toBe(200);
    expect(theirs.body.id).not.toBe(mine.body.id);
  });
});

describe('SPEC §6 users: GET /user/{id}', () => {
  test('answers id, tag, status, metadata and created_at, and no personal data', async () => {
    const body = userBody((b) => {
      b.phone_number = '+12015550123';
    });
    const created = await ledger.users.create(body as Schemas['UserCreateRequest']);
    const user = await ledger.users.retrieve(created.id);
    expect(user).toEqual({
      id: created.id,
      tag: body.tag,
      status: 'enabled',
      identity_verified: true,
      suspended_reason: null,
      self_excluded_until: null,
      metadata: {},
      created_at: expect.any(String),
    });
    expect(new Date(user.created_at).toISOString()).toBe(user.created_at);
    for (const secret of [body.email, body.name.first, body.address.address_line_1, body.date_of_birth, body.phone_number]) {
      expect(JSON.stringify(user)).not.toContain(secret);
    }
  });

  test('a user without a tag shows tag null', async () => {
    const created = await ledger.users.create(
      sdkUser((b) => {
        delete b.tag;
        b.email = `untagged-${randomString(8)}@example.com`;
      }),
    );
    expect((await ledger.users.retrieve(created.id)).tag).toBeNull();
  });

  test('an unknown id answers 404 not_found', async () => {
    const error = await ledger.users.retrieve(`user_${randomString(24)}`).catch((e: unknown) => e as LedgerError);
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect(error).toMatchObject({
      status: 404,
      type: 'invalid_request_error',
      code: 'not_found',
      requestId: expect.stringMatching(/^req_/),
    });
  });

  test("another organization's user answers 404, never 403, on read, list and simulate", async () => {
    const created = await ledger.users.create(sdkUser());
    const other = await createTestOrg(stack.pool, { write: 1000 });
    const otherLedger = new Ledger({ apiKey: other.apiKey, baseUrl: stack.url });
    await expect(otherLedger.users.retrieve(created.id)).rejects.toMatchObject({ status: 404, code: 'not_found' });
    await expect(otherLedger.simulate.suspendUser(created.id)).rejects.toMatchObject({ status: 404, code: 'not_found' });
    expect((await otherLedger.users.list({ limit: 100 })).data).toEqual([]);
    // Untouched by the other organization's attempt.
    expect((await ledger.users.retrieve(created.id)).status).toBe('enabled');
  });
});

describe('SPEC §6 users: GET /user lists with §8 paging', () => {
  /** Every user of the list through the SDK's pages, checking each page's size and the last page's cursor. */
  async function pageAll(client: Ledger, query: { status?: UserStatus }, limit: number): Promise<Schemas['User'][]> {
    const seen: Schemas['User'][] = [];
    for await (const page of client.users.list({ ...query, limit }).pages()) {
      expect(page.data.length).toBeLessThanOrEqual(limit);
      seen.push(...page.data);
      if (!page.has_more) expect(page.next_cursor).toBeNull();
    }
    return seen;
  }

  test('pages newest first without skips or repeats while users are being created', async () => {
    const pagingOrg = await createTestOrg(stack.pool, { write: 10_000, read: 10_000 });
    const client = new Ledger({ apiKey: pagingOrg.apiKey, baseUrl: stack.url });
    const before: string[] = [];
    for (let i = 0; i < 30; i++) before.push((await client.users.create(sdkUser())).id);
    const writers = Promise.all(Array.from({ length: 20 }, () => client.users.create(sdkUser())));
    const seen = await pageAll(client, {}, 4);
    const created = await writers;
    const ids = seen.map((user) => user.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of before) expect(ids).toContain(id);
    for (let i = 1; i < seen.length; i++) expect(seen[i - 1]!.created_at >= seen[i]!.created_at).toBe(true);
    // After the writers finish, a fresh traversal holds exactly every user once.
    const all = (await pageAll(client, {}, 7)).map((user) => user.id);
    expect(new Set(all)).toEqual(new Set([...before, ...created.map((user) => user.id)]));
    expect(all).toHaveLength(50);
  });

  test('rows sharing created_at, or differing by microseconds, page exactly once each', async () => {
    const tieOrg = await createTestOrg(stack.pool);
    // Three share one instant; six sit a microsecond apart, finer than a JS Date can tell.
    const offsetsUs = [0, 0, 0, 1, 2, 3, 4, 5, 6];
    const ids: string[] = [];
    for (const offsetUs of offsetsUs) {
      const id = `user_${randomString(24)}`;
      ids.push(id);
      await stack.pool.query(
        `INSERT INTO users (id, organization_id, status, identity_verified, first_name, last_name, email, date_of_birth, address,
                            government_id_type, government_id_last4, created_at)
         VALUES ($1, $2, 'enabled', true, 'T', 'U', 't@example.com', '1990-01-01', '{}', 'passport', '1234',
                 '2026-01-01T00:00:00.000000Z'::timestamptz + $3::int * interval '1 microsecond')`,
        [id, tieOrg.organizationId, offsetUs],
      );
    }
    const paged = (await pageAll(new Ledger({ apiKey: tieOrg.apiKey, baseUrl: stack.url }), {}, 2)).map((user) => user.id);
    expect(paged).toHaveLength(9);
    expect(new Set(paged)).toEqual(new Set(ids));
  });

  test('filters by status', async () => {
    const filterOrg = await createTestOrg(stack.pool);
    const byStatus: Record<UserStatus, string[]> = { created: [], enabled: [], suspended: [], disabled: [] };
    for (const status of ['created', 'enabled', 'enabled', 'suspended', 'suspended', 'suspended', 'disabled'] as const) {
      byStatus[status].push(await createTestUser(stack.pool, filterOrg.organizationId, status));
    }
    const client = new Ledger({ apiKey: filterOrg.apiKey, baseUrl: stack.url });
    for (const status of ['created', 'enabled', 'suspended', 'disabled'] as const) {
      const listed = await pageAll(client, { status }, 2);
      expect(new Set(listed.map((user) => user.id))).toEqual(new Set(byStatus[status]));
      expect(listed.every((user) => user.status === status)).toBe(true);
    }
    expect(await pageAll(client, {}, 100)).toHaveLength(7);
  });

  test('defaults to 25 per page', async () => {
    const bigOrg = await createTestOrg(stack.pool);
    for (let i = 0; i < 26; i++) await createTestUser(stack.pool, bigOrg.organizationId);
    const page = await new Ledger({ apiKey: bigOrg.apiKey, baseUrl: stack.url }).users.list();
    expect(page.data).toHaveLength(25);
    expect(page.has_more).toBe(true);
    expect(typeof page.next_cursor).toBe('string');
  });

  test.each([
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=abc', 'limit'],
    ['status=active', 'status'],
    ['cursor=not-a-cursor!', 'cursor'],
    [`cursor=${Buffer.from('{"c":"x","i":"y"}').toString('base64url')}`, 'cursor'],
  ])('refuses ?%s with 400 naming %s', async (query, param) => {
    const response = await call('GET', `/user?${query}`);
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'validation_failed', param });
  });
});

describe('SPEC §6 users: status lifecycle', () => {
  const matrix: Array<[UserStatus, UserStatus, 'changed' | 'unchanged' | 'refused']> = [
    ['created', 'enabled', 'changed'],
    ['created', 'suspended', 'refused'],
    ['created', 'disabled', 'changed'],
    ['enabled', 'enabled', 'unchanged'],
    ['enabled', 'suspended', 'changed'],
    ['enabled', 'disabled', 'changed'],
    ['suspended', 'enabled', 'changed'],
    ['suspended', 'suspended', 'unchanged'],
    ['suspended', 'disabled', 'changed'],
    ['disabled', 'enabled', 'refused'],
    ['disabled', 'suspended', 'refused'],
    ['disabled', 'disabled', 'unchanged'],
  ];
  test.each(matrix)('%s → %s is %s', async (from, to, outcome) => {
    const userId = await createTestUser(stack.pool, org.organizationId, from);
    const attempt = withTransaction(stack.pool, (tx) => changeUserStatus(tx, { userId, to, source: 'cli', now: new Date() }));
    if (outcome === 'refused') {
      await expect(attempt).rejects.toMatchObject({ status: 409, code: 'invalid_state' });
      await expect(attempt).rejects.toBeInstanceOf(ApiError);
    } else {
      await expect(attempt).resolves.toMatchObject({
        previous_status: from,
        changed: outcome === 'changed',
        user: { id: userId, status: to },
      });
    }
    expect(await getUserStatus(stack.pool, org.organizationId, userId)).toBe(outcome === 'refused' ? from : to);
    const history = await stack.pool.query<{ from_status: string | null; to_status: string; source: string }>(
      `SELECT from_status, to_status, source FROM user_status_history WHERE user_id = $1 ORDER BY seq`,
      [userId],
    );
    const expected = [{ from_status: null, to_status: from, source: 'system' }];
    if (outcome === 'changed') expected.push({ from_status: from, to_status: to, source: 'cli' } as never);
    expect(history.rows).toEqual(expected);
    const events = await eventsFor(userId);
    if (outcome === 'changed') {
      expect(events).toEqual([
        { type: 'user.status_changed', data: expect.objectContaining({ id: userId, status: to, previous_status: from }) },
      ]);
    } else {
      expect(events).toEqual([]);
    }
  });

  test('the database itself refuses a transition the lifecycle does not have', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId, 'disabled');
    await expect(stack.pool.query(`UPDATE users SET status = 'enabled' WHERE id = $1`, [userId])).rejects.toThrow(
      /may not go from disabled to enabled/,
    );
    await expect(stack.pool.query(`DELETE FROM user_status_history WHERE user_id = $1`, [userId])).rejects.toThrow(/append-only/);
  });

  test('creation records user.created in the outbox with the public user', async () => {
    const body = userBody();
    const created = await call('POST', '/user', body);
    const events = await eventsFor(created.body.id);
    expect(events).toEqual([
      {
        type: 'user.created',
        data: {
          id: created.body.id,
          tag: body.tag,
          status: 'enabled',
          identity_verified: true,
          suspended_reason: null,
          self_excluded_until: null,
          metadata: {},
          created_at: expect.any(String),
        },
      },
    ]);
    expect(JSON.stringify(events)).not.toContain(body.email);
  });

  test('getUserStatus answers the status for the owner and null for another organization or an unknown id', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId, 'suspended');
    const other = await createTestOrg(stack.pool);
    expect(await getUserStatus(stack.pool, org.organizationId, userId)).toBe('suspended');
    expect(await getUserStatus(stack.pool, other.organizationId, userId)).toBeNull();
    expect(await getUserStatus(stack.pool, org.organizationId, `user_${randomString(24)}`)).toBeNull();
    expect(await withTransaction(stack.pool, (tx) => getUserStatus(tx, org.organizationId, userId, { lock: 'share' }))).toBe('suspended');
  });

  describe('POST /simulate/user/{id}/suspend (sandbox)', () => {
    test('suspends an enabled user, records the change and answers the user', async () => {
      const created = await call('POST', '/user', userBody());
      const response = await call('POST', `/simulate/user/${created.body.id}/suspend`);
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ id: created.body.id, status: 'suspended' });
      expect((await eventsFor(created.body.id)).map((event) => event.type)).toEqual(['user.created', 'user.status_changed']);
      const history = await stack.pool.query(`SELECT source FROM user_status_history WHERE user_id = $1 ORDER BY seq`, [created.body.id]);
      expect(history.rows.map((row) => row.source)).toEqual(['api', 'simulation']);
    });

    test('a user already suspended is answered unchanged', async () => {
      const userId = await createTestUser(stack.pool, org.organizationId, 'suspended');
      const response = await call('POST', `/simulate/user/${userId}/suspend`);
      expect(response.status).toBe(200);
      expect(response.body.status).toBe('suspended');
      expect(await eventsFor(userId)).toEqual([]);
    });

    test.each(['created', 'disabled'] as const)('a %s user answers 409 invalid_state', async (status) => {
      const userId = await createTestUser(stack.pool, org.organizationId, status);
      const response = await call('POST', `/simulate/user/${userId}/suspend`);
      expect(response.status).toBe(409);
      expect(response.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_state' });
      expect(await getUserStatus(stack.pool, org.organizationId, userId)).toBe(status);
    });

    test('an unknown user answers 404', async () => {
      expect((await call('POST', `/simulate/user/user_${randomString(24)}/suspend`)).status).toBe(404);
    });

    test('production does not route it (404)', async () => {
      const production = await startStack({ worker: false, env: { LEDGER_ENVIRONMENT: 'production' } });
      try {
        const prodOrg = await createTestOrg(production.pool, { environment: 'production' });
        const userId = await createTestUser(production.pool, prodOrg.organizationId, 'enabled');
        const response = await apiClient(production.url, prodOrg.apiKey)('POST', `/simulate/user/${userId}/suspend`);
        expect(response.status).toBe(404);
        expect(response.body.error.code).toBe('route_not_found');
        expect(await getUserStatus(production.pool, prodOrg.organizationId, userId)).toBe('enabled');
      } finally {
        await production.stop();
      }
    });
  });

  describe('operator CLI: user set-status', () => {
    function admin(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
      const root = path.resolve(__dirname, '..');
      return new Promise((resolve) => {
        execFile(
          path.join(root, 'node_modules/.bin/tsx'),
          ['ops/bin/admin.ts', ...args],
          {
            cwd: root,
            env: { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: testInfra().databaseUrl, LOG_LEVEL: 'silent' },
            timeout: 60_000,
          },
          (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
        );
      });
    }

    test('moves a user and prints one JSON object', async () => {
      const userId = await createTestUser(stack.pool, org.organizationId, 'enabled');
      const result = await admin(['user', 'set-status', userId, 'suspended', '--json']);
      expect(result.code).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual({ user_id: userId, status: 'suspended', previous_status: 'enabled', changed: true });
      expect(await getUserStatus(stack.pool, org.organizationId, userId)).toBe('suspended');
    });

    test('refuses a transition the lifecycle does not have with an invalid_state error', async () => {
      const userId = await createTestUser(stack.pool, org.organizationId, 'disabled');
      const result = await admin(['user', 'set-status', userId, 'enabled', '--json']);
      expect(result.code).toBe(1);
      expect(JSON.parse(result.stdout)).toEqual({ error: { code: 'invalid_state', message: expect.stringContaining('final') } });
      expect(await getUserStatus(stack.pool, org.organizationId, userId)).toBe('disabled');
    });

    test('names an unknown user and refuses an unknown status', async () => {
      const unknown = await admin(['user', 'set-status', `user_${randomString(24)}`, 'enabled', '--json']);
      expect(unknown.code).toBe(1);
      expect(JSON.parse(unknown.stdout).error.code).toBe('not_found');
      const badStatus = await admin(['user', 'set-status', `user_${randomString(24)}`, 'created', '--json']);
      expect(badStatus.code).toBe(2);
      expect(JSON.parse(badStatus.stdout).error.code).toBe('usage');
    });
  });
});

describe('SPEC §14 operability for users', () => {
  test('/openapi.json documents every user endpoint with examples', async () => {
    const document = (await (await fetch(`${stack.url}/openapi.json`)).json()) as Body;
    const org = await createTestOrg(stack.pool);
    const call = apiClient(stack.url, org.apiKey);
    const created = await call('POST', '/user', userBody());
    expectDocumented(document, [
      ['post', '/user', created],
      [
        'post',
        '/user',
        await call(
          'POST',
          '/user',
          userBody((body) => delete body.email),
        ),
      ],
      ['get', '/user', await call('GET', '/user')],
      ['get', '/user/{id}', await call('GET', `/user/${created.body.id}`)],
      ['get', '/user/{id}', await call('GET', `/user/user_${randomString(24)}`)],
      ['post', '/simulate/user/{id}/suspend', await call('POST', `/simulate/user/${created.body.id}/suspend`)],
    ]);
    for (const name of ['UserCreateRequest', 'UserCreated', 'User', 'UserList']) expect(exampleMismatches(document, name)).toEqual([]);
    expect(document.components.schemas.UserCreateRequest.required).toEqual(
      expect.arrayContaining(['name', 'address', 'email', 'date_of_birth', 'government_id', 'identity_verified']),
    );
  });

  test('log redaction hides names, emails, birth dates, addresses and row values in database errors', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const log = pino({ redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, sink);
    const body = userBody((b) => {
      b.phone_number = '+12015550123';
    });
    log.info({ body }, 'a body');
    log.info({ user: { first_name: 'Ada', last_name: 'Lovelace', email: body.email } }, 'a row');
    log.error(
      {
        err: {
          message: 'new row violates check constraint',
          detail: 'Failing row contains (user_x, Ada, Lovelace, ada@example.com, 1990-12-10)',
        },
      },
      'db',
    );
    const output = lines.join('');
    for (const secret of ['Ada', 'Lovelace', 'ada@example.com', '1990-12-10', '12 Market Street', 'Newark', '+12015550123', '6789']) {
      expect(output).not.toContain(secret);
    }
  });
});
