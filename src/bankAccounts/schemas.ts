import { idExample, listEnvelope, pageQuery, z } from '../zod';

/** SPEC §24 bank accounts: what the API shows of them, never the account number itself. */

export const BANK_ACCOUNT_LIMITS = {
  // SPEC §24: 4–17 characters, NACHA's DFI Account Number field (17 positions); letters and digits only.
  accountNumberLengthMin: 4,
  accountNumberLengthMax: 17,
  disabledReasonLengthMax: 200,
};

export const ACCOUNT_TYPES = ['checking', 'savings'] as const;
export const accountTypeSchema = z
  .enum(ACCOUNT_TYPES)
  .openapi({ description: 'The kind of deposit account: it picks the ACH transaction code (27/22 checking, 37/32 savings).' });
export type AccountType = z.infer<typeof accountTypeSchema>;

/** An account number as input: checked for its form only; messages never repeat the value. */
export const accountNumberInput = z
  .string()
  .regex(
    new RegExp(`^[A-Za-z0-9]{${BANK_ACCOUNT_LIMITS.accountNumberLengthMin},${BANK_ACCOUNT_LIMITS.accountNumberLengthMax}}$`),
    `must be ${BANK_ACCOUNT_LIMITS.accountNumberLengthMin} to ${BANK_ACCOUNT_LIMITS.accountNumberLengthMax} letters or digits`,
  );

export const bankAccountStatusSchema = z.enum(['active', 'disabled']).openapi({
  description: '`active` bank accounts take payments; a `disabled` one declines every intent that names it (`bank_account_disabled`).',
});

const bankAccountExample = {
  id: idExample('ba'),
  user_id: idExample('user'),
  bank: 'Sandbox Test Bank',
  routing_number: '110000000',
  last4: '6789',
  account_type: 'checking' as const,
  status: 'active' as const,
  disabled_reason: null,
  created_at: '2026-11-21T14:03:12.511Z',
};

export const bankAccountSchema = z
  .object({
    id: z.string().openapi({ example: idExample('ba') }),
    user_id: z.string().openapi({ example: idExample('user') }),
    bank: z.string().nullable().openapi({ description: 'The bank, when the routing number is one the service knows; null otherwise.' }),
    routing_number: z.string().openapi({ description: 'ABA routing number (9 digits).', example: '110000000' }),
    last4: z.string().openapi({ description: 'The last four characters of the account number; the number itself is never shown.' }),
    account_type: accountTypeSchema,
    status: bankAccountStatusSchema,
    disabled_reason: z
      .string()
      .nullable()
      .openapi({ description: 'Why it was disabled (for instance the ACH return code that closed it); null while active.' }),
    created_at: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('BankAccount', {
    description:
      "A user's reusable bank account, made by POST /authorize with a bank account token. Its full account number is kept only sealed, for the ACH rail.",
    example: bankAccountExample,
  });
export type BankAccount = z.infer<typeof bankAccountSchema>;

export const bankAccountList = listEnvelope(bankAccountSchema).openapi('BankAccountList', {
  example: { data: [bankAccountExample], has_more: false, next_cursor: null },
});

export const bankAccountListQuery = pageQuery;
export type BankAccountListQuery = z.infer<typeof bankAccountListQuery>;
