import countries from 'i18n-iso-countries';
import { metadataField, metadataFilter, metadataSchema } from '../metadata/schemas';
import { listEnvelope, pageQuery, z } from '../zod';

/**
 * SPEC §6 users: the one schema per resource that validates POST /user, types the code and writes
 * /openapi.json. Every string has a length limit; every rule reports its own field path (`param`).
 */

export const USER_LIMITS = {
  nameLengthMax: 100,
  addressLineLengthMax: 200,
  localityLengthMax: 100,
  administrativeAreaLengthMax: 100,
  postalCodeLengthMax: 20,
  // RFC 5321: a forward path holds at most 256 octets including the angle brackets.
  emailLengthMax: 254,
  governmentIdStateLengthMax: 100,
  tagLengthMax: 255,
  /** Nobody alive was born before this; older dates are typing mistakes. */
  dateOfBirthYearMin: 1900,
};

export const USER_STATUSES = ['created', 'enabled', 'suspended', 'disabled'] as const;
export type UserStatus = (typeof USER_STATUSES)[number];
export const userStatus = z.enum(USER_STATUSES).openapi({
  description: 'created → enabled; enabled ↔ suspended; any → disabled (final). Only `enabled` users can move money.',
  example: 'enabled',
});

export const GOVERNMENT_ID_TYPES = ['passport', 'drivers_license', 'state_id', 'military_id', 'ssn'] as const;
/** Ids issued by a US state: meaningless without the issuing state. */
const STATE_ISSUED_ID_TYPES: ReadonlySet<string> = new Set(['drivers_license', 'state_id']);

/** USPS codes of the states, DC, the territories and the armed-forces "states" (AA, AE, AP). */
export const US_ADMINISTRATIVE_AREAS: ReadonlySet<string> = new Set([
  'AL',
  'AK',
  'AZ',
  'AR',
  'CA',
  'CO',
  'CT',
  'DE',
  'FL',
  'GA',
  'HI',
  'ID',
  'IL',
  'IN',
  'IA',
  'KS',
  'KY',
  'LA',
  'ME',
  'MD',
  'MA',
  'MI',
  'MN',
  'MS',
  'MO',
  'MT',
  'NE',
  'NV',
  'NH',
  'NJ',
  'NM',
  'NY',
  'NC',
  'ND',
  'OH',
  'OK',
  'OR',
  'PA',
  'RI',
  'SC',
  'SD',
  'TN',
  'TX',
  'UT',
  'VT',
  'VA',
  'WA',
  'WV',
  'WI',
  'WY',
  'DC',
  'AS',
  'GU',
  'MP',
  'PR',
  'VI',
  'UM',
  'AA',
  'AE',
  'AP',
]);

const US_POSTAL_CODE = /^[0-9]{5}(-[0-9]{4})?$/;
const E164 = /^\+[1-9][0-9]{1,14}$/;
// Control characters (NUL above all: Postgres text cannot hold it) have no place in names or addresses.
// (Written as ranges without the u flag so /openapi.json can carry the same pattern.)
// eslint-disable-next-line no-control-regex -- refusing control characters is this pattern's whole purpose
const NO_CONTROL_CHARACTERS = /^[^\x00-\x1f\x7f-\x9f]*$/;

/** "is required" for a missing field; zod's own message for any other type mismatch. */
const requiredError = (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : undefined);

/** An object that refuses fields it does not know, so a typo (`phone` for `phone_number`) is not lost silently. */
function closed<S extends z.ZodRawShape>(shape: S) {
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `has unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((key: string) => `"${key}"`).join(', ')}`
        : requiredError(issue),
  });
}

/** A required piece of human-readable text: trimmed, 1..max characters, no control characters. */
function text(lengthMax: number) {
  return (
    z
      .string({ error: requiredError })
      .trim()
      .min(1, 'must not be empty')
      .max(lengthMax, `must be at most ${lengthMax} characters`)
      .regex(NO_CONTROL_CHARACTERS, 'must not contain control characters')
      // The check after trim as a pattern: no control character, and at least one that is not whitespace.
      .openapi({ pattern: '^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x1f\\x7f-\\x9f]*$' })
  );
}

export function isIsoAlpha2Country(code: string): boolean {
  return /^[A-Z]{2}$/.test(code) && Object.hasOwn(countries.getAlpha2Codes(), code);
}

/** Why `value` is not an acceptable date of birth on `today` (UTC), or null when it is. */
export function dateOfBirthProblem(value: string, today: Date): string | null {
  const match = /^([0-9]{4})-([0-9]{2})-([0-9]{2})$/.exec(value);
  if (!match) return 'must be a date written YYYY-MM-DD';
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (year < USER_LIMITS.dateOfBirthYearMin) return `must be on or after ${USER_LIMITS.dateOfBirthYearMin}-01-01`;
  // Date.UTC rolls 2023-02-30 over to March 2; a real date survives the round trip unchanged.
  const date = new Date(Date.UTC(year, month - 1, day));
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) {
    return 'is not a real calendar date';
  }
  // Same-width YYYY-MM-DD strings compare like the dates they name.
  if (value >= today.toISOString().slice(0, 10)) return 'must be in the past';
  return null;
}

const nameSchema = closed({
  first: text(USER_LIMITS.nameLengthMax).openapi({ example: 'Ada' }),
  last: text(USER_LIMITS.nameLengthMax).openapi({ example: 'Lovelace' }),
}).openapi({ description: 'Legal name of the user.' });

/** Members of a raw (possibly invalid) object, for rules that must run even when a sibling field failed. */
function field(input: unknown, name: string): unknown {
  return input !== null && typeof input === 'object' ? (input as Record<string, unknown>)[name] : undefined;
}

const addressSchema = closed({
  address_line_1: text(USER_LIMITS.addressLineLengthMax).openapi({ example: '12 Market Street' }),
  address_line_2: text(USER_LIMITS.addressLineLengthMax).nullish().openapi({ example: 'Apt 4B' }),
  locality: text(USER_LIMITS.localityLengthMax).openapi({ description: 'City or town.', example: 'Newark' }),
  administrative_area: text(USER_LIMITS.administrativeAreaLengthMax).openapi({
    description: 'State, province or region. For `US`: a USPS state or territory code (NJ, DC, PR, AA, ...).',
    'x-refined': 'depends on country',
    example: 'NJ',
  }),
  postal_code: text(USER_LIMITS.postalCodeLengthMax).openapi({
    description: 'For `US`: 5 digits or 5+4 digits (`07102` or `07102-1234`).',
    'x-refined': 'depends on country',
    example: '07102',
  }),
  country: z
    .string({ error: requiredError })
    .refine(isIsoAlpha2Country, 'must be an ISO 3166-1 alpha-2 country code in capitals, such as US')
    .openapi({
      description: 'ISO 3166-1 alpha-2 code, in capitals.',
      enum: Object.keys(countries.getAlpha2Codes()).sort(),
      example: 'US',
    }),
})
  // `when` lets these rules run even while another address member fails, so one response names every
  // bad field instead of revealing them one retry at a time.
  .refine(
    (address) => {
      const area = field(address, 'administrative_area');
      return field(address, 'country') !== 'US' || typeof area !== 'string' || US_ADMINISTRATIVE_AREAS.has(area.trim());
    },
    {
      path: ['administrative_area'],
      message: 'must be a US state or territory code (such as NJ, DC or PR) when country is US',
      when: () => true,
    },
  )
  .refine(
    (address) => {
      const code = field(address, 'postal_code');
      return field(address, 'country') !== 'US' || typeof code !== 'string' || US_POSTAL_CODE.test(code.trim());
    },
    { path: ['postal_code'], message: 'must be 5 digits or 5+4 digits (12345 or 12345-6789) when country is US', when: () => true },
  )
  .openapi({ description: 'Primary residential address.' });

/** The refinement below as JSON Schema: a state-issued id names its state. */
const stateIssuedNamesState = {
  if: { properties: { type: { enum: [...STATE_ISSUED_ID_TYPES] } }, required: ['type'] },
  then: { required: ['state'], not: { properties: { state: { type: 'null' } } } },
};

const governmentIdSchema = closed({
  type: z
    .enum(GOVERNMENT_ID_TYPES, { error: (issue) => requiredError(issue) ?? `must be one of ${GOVERNMENT_ID_TYPES.join(', ')}` })
    .openapi({ example: 'drivers_license' }),
  last4: z
    .string({ error: requiredError })
    .regex(/^[0-9]{4}$/, 'must be exactly four digits')
    .openapi({ description: 'Last four digits only; never send the full number.', example: '6789' }),
  state: text(USER_LIMITS.governmentIdStateLengthMax).nullish().openapi({
    description: 'Issuing state; required for `drivers_license` and `state_id`.',
    example: 'NJ',
  }),
})
  .refine(
    (id) => {
      const state = field(id, 'state');
      return !STATE_ISSUED_ID_TYPES.has(String(field(id, 'type'))) || (state !== undefined && state !== null);
    },
    { path: ['state'], message: 'is required when type is drivers_license or state_id', when: () => true },
  )
  .openapi({
    description: 'Of the government id only its type, last four digits and issuing state are kept.',
    ...stateIssuedNamesState,
  });

export const userCreateBody = closed({
  name: nameSchema,
  address: addressSchema,
  email: z
    .email({ error: (issue) => requiredError(issue) ?? 'must be an email address' })
    .max(USER_LIMITS.emailLengthMax)
    .openapi({ 'x-refined': "zod's email check, stricter than the format", example: 'ada@example.com' }),
  date_of_birth: z
    .string({ error: requiredError })
    .max(10, 'must be a date written YYYY-MM-DD')
    .superRefine((value, ctx) => {
      const problem = dateOfBirthProblem(value, new Date());
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .openapi({
      format: 'date',
      pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$',
      description: 'A real calendar date in the past, YYYY-MM-DD, on or after 1900-01-01. Checked beyond this schema.',
      'x-refined': 'a real date in the past, not before 1900',
      example: '1990-12-10',
    }),
  government_id: governmentIdSchema,
  identity_verified: z.boolean({ error: (issue) => requiredError(issue) ?? 'must be true or false' }).openapi({
    description: "Whether the operator verified the user's identity. Must be true when the organization requires KYC.",
    example: true,
  }),
  phone_number: z.string().regex(E164, 'must be an E.164 number such as +12015550123').nullish().openapi({ example: '+12015550123' }),
  tag: z
    .string()
    .min(1, 'must not be empty')
    .max(USER_LIMITS.tagLengthMax, `must be at most ${USER_LIMITS.tagLengthMax} characters`)
    .regex(NO_CONTROL_CHARACTERS, 'must not contain control characters')
    .nullish()
    .openapi({
      description:
        "The caller's own id for the user, unique per organization. A repeated tag returns the original user and creates nothing.",
      example: 'customer-8841',
    }),
  metadata: metadataField,
}).openapi('UserCreateRequest', {
  example: {
    name: { first: 'Ada', last: 'Lovelace' },
    address: {
      address_line_1: '12 Market Street',
      address_line_2: 'Apt 4B',
      locality: 'Newark',
      administrative_area: 'NJ',
      postal_code: '07102',
      country: 'US',
    },
    email: 'ada@example.com',
    date_of_birth: '1990-12-10',
    government_id: { type: 'drivers_license', last4: '6789', state: 'NJ' },
    identity_verified: true,
    phone_number: '+12015550123',
    tag: 'customer-8841',
    metadata: { crm_id: 'crm-5521' },
  },
});
export type UserCreateBody = z.infer<typeof userCreateBody>;

const userIdExample = 'user_Q3kV9xLm2pR7tZ8wY1bN4cD6';

export const userCreated = z
  .object({
    id: z.string().openapi({ description: 'The new user, or the original one when the tag was seen before.', example: userIdExample }),
  })
  .openapi('UserCreated', { example: { id: userIdExample } });

export const userSchema = z
  .object({
    id: z.string().openapi({ example: userIdExample }),
    tag: z.string().nullable().openapi({ example: 'customer-8841' }),
    status: userStatus,
    identity_verified: z.boolean({ error: (issue) => requiredError(issue) ?? 'must be true or false' }).openapi({ example: true }),
    suspended_reason: z.enum(['self_exclusion']).nullable().openapi({
      description:
        '`self_exclusion` while the user excluded themselves (SPEC §26: nobody can lift it before `self_excluded_until`); null otherwise.',
    }),
    self_excluded_until: z.string().nullable().openapi({
      description: 'When the self-exclusion ends (a date-time) or `indefinite`; null when the user is not self-excluded.',
    }),
    metadata: metadataSchema,
    created_at: z.string().openapi({ format: 'date-time', example: '2026-11-21T14:03:12.511Z' }),
  })
  .openapi('User', {
    description: 'A user as the API shows it: no personal data is ever returned.',
    example: {
      id: userIdExample,
      tag: 'customer-8841',
      status: 'enabled',
      identity_verified: true,
      suspended_reason: null,
      self_excluded_until: null,
      metadata: { crm_id: 'crm-5521' },
      created_at: '2026-11-21T14:03:12.511Z',
    },
  });
export type User = z.infer<typeof userSchema>;

export const userList = listEnvelope(userSchema).openapi('UserList', {
  example: {
    data: [
      {
        id: userIdExample,
        tag: 'customer-8841',
        status: 'enabled',
        identity_verified: true,
        suspended_reason: null,
        self_excluded_until: null,
        metadata: { crm_id: 'crm-5521' },
        created_at: '2026-11-21T14:03:12.511Z',
      },
    ],
    has_more: true,
    next_cursor: userIdExample,
  },
});

export const userListQuery = pageQuery.extend({
  status: userStatus.optional().openapi({ description: 'Only users in this status.' }),
  metadata: metadataFilter,
});

export const userIdParams = z.object({
  id: z.string().min(1).max(255).openapi({ description: 'The user id (user_…).', example: userIdExample }),
});
