import { z } from '../zod';
import { metadataField } from '../metadata/schemas';
import { directionSchema, paymentAmountSchema } from '../ledger/contract';
import { accountNumberInput, accountTypeSchema } from '../bankAccounts/contract';
import { abaValid, cardBrand, cvcLength, luhnValid } from './checks';

/** Tokens live 15 minutes and authorize once (SPEC §11). */
export const TOKEN_LIMITS = {
  ttlMs: 15 * 60_000,
  cardDigitsMin: 12,
  cardDigitsMax: 19,
};

const exampleId = (prefix: string) => `${prefix}_7fJ2kQ9xLmN3pR5tV8wY1zA4`;

// Messages never repeat the value: a rejected number must not come back in the error body or the logs.
const bankAccountInput = z
  .object({
    routing_number: z
      .string()
      .regex(/^\d{9}$/, { message: 'must be 9 digits', abort: true })
      .refine(abaValid, 'is not a valid ABA routing number (checksum or Federal Reserve prefix)')
      .openapi({
        description: 'ABA routing number: 9 digits passing the 3-7-1 checksum (checked beyond this schema).',
        'x-refined': 'ABA checksum',
        example: '110000000',
      }),
    account_number: accountNumberInput.openapi({
      description:
        'Account number, 4 to 17 letters or digits. Kept only sealed (AES-256-GCM under BANK_DATA_KEY) for the ACH rail; answers show its last four characters.',
      example: '000123456789',
    }),
    account_type: accountTypeSchema.default('checking'),
  })
  .strict();

const cardInput = z
  .object({
    number: z
      .string()
      .regex(new RegExp(`^\\d{${TOKEN_LIMITS.cardDigitsMin},${TOKEN_LIMITS.cardDigitsMax}}$`), {
        message: `must be ${TOKEN_LIMITS.cardDigitsMin} to ${TOKEN_LIMITS.cardDigitsMax} digits`,
        abort: true,
      })
      .refine(luhnValid, 'fails the Luhn check')
      .openapi({
        description:
          'Card number, 12 to 19 digits passing the Luhn check (checked beyond this schema). Only its brand and last four digits are kept.',
        'x-refined': 'Luhn check',
        example: '4242424242424242',
      }),
    exp_month: z.number().int().min(1).max(12).openapi({ example: 12 }),
    exp_year: z.number().int().min(2000).max(2100).openapi({
      description: 'Four digits. The card must not have expired (Eastern-time months; checked beyond this schema).',
      'x-refined': 'not expired',
      example: 2030,
    }),
    cvc: z
      .string()
      .regex(/^\d{3,4}$/, 'must be 3 or 4 digits')
      .openapi({
        description: 'Checked for its length (4 digits on Amex, 3 elsewhere; beyond this schema) and never stored.',
        'x-refined': 'length by card brand',
        example: '123',
      }),
  })
  .strict()
  .superRefine((card, ctx) => {
    if (typeof card.number !== 'string' || typeof card.cvc !== 'string' || !luhnValid(card.number)) return;
    if (card.cvc.length !== cvcLength(cardBrand(card.number))) {
      ctx.addIssue({ code: 'custom', path: ['cvc'], message: `must be ${cvcLength(cardBrand(card.number))} digits for this card brand` });
    }
  });

export const createTokenBody = z
  .object({
    user_id: z
      .string()
      .min(1)
      .max(100)
      .openapi({ example: exampleId('user') }),
    bank_account: bankAccountInput.optional(),
    card: cardInput.optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    if ((body.bank_account === undefined) === (body.card === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['bank_account'], message: 'give exactly one of bank_account or card' });
    }
  })
  .openapi('CreateToken', {
    description: 'Exactly one of `bank_account` or `card`.',
    oneOf: [{ required: ['bank_account'] }, { required: ['card'] }],
    example: { user_id: exampleId('user'), card: { number: '4242424242424242', exp_month: 12, exp_year: 2030, cvc: '123' } },
  });
export type CreateTokenBody = z.infer<typeof createTokenBody>;

export const tokenTypeSchema = z.enum(['bank_account', 'card']);

export const tokenSchema = z
  .object({
    id: z.string().openapi({ example: exampleId('token') }),
    type: tokenTypeSchema,
    user_id: z.string().openapi({ example: exampleId('user') }),
    bank_account: z
      .object({
        bank: z.string().nullable().openapi({
          description: 'The bank, when the routing number is one the service knows; null otherwise.',
          example: 'Sandbox Test Bank',
        }),
        last4: z.string().openapi({ example: '6789' }),
        routing_number: z.string().nullable().openapi({
          description: 'The ABA routing number (null only on tokens made before bank accounts were kept).',
          example: '110000000',
        }),
        account_type: accountTypeSchema,
      })
      .nullable()
      .openapi({ description: 'Masked bank account (type `bank_account`); null for cards. The account number is never shown.' }),
    card: z
      .object({
        brand: z.enum(['visa', 'mastercard', 'amex', 'discover', 'diners', 'jcb', 'unionpay', 'unknown']).openapi({ example: 'visa' }),
        last4: z.string().openapi({ example: '4242' }),
        exp_month: z.number().int().openapi({ example: 12 }),
        exp_year: z.number().int().openapi({ example: 2030 }),
      })
      .nullable()
      .openapi({ description: 'Masked card (type `card`); null for bank accounts.' }),
    expires_at: z
      .string()
      .openapi({ format: 'date-time', description: '15 minutes after creation; POST /authorize refuses it afterwards (token_expired).' }),
    used: z.boolean().openapi({ description: 'True once POST /authorize used it; a token authorizes once.' }),
    created_at: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('Token', {
    description:
      "A single-use stand-in for a bank account or card, valid 15 minutes. Only masked forms (last four digits, brand or bank) are returned. A card number is never kept; a bank account number is kept only sealed, and POST /authorize moves it into the user's bank account.",
  });
export type Token = z.infer<typeof tokenSchema>;

export const authorizeBody = z
  .object({
    token: z
      .string()
      .min(1)
      .max(100)
      .openapi({
        description: 'An unused, unexpired token. Also the idempotency key: the same token again replays the first response.',
        example: exampleId('token'),
      }),
    amount: paymentAmountSchema,
    currency: z.literal('USD'),
    direction: directionSchema,
    account_id: z
      .string()
      .min(1)
      .max(100)
      .optional()
      .openapi({ description: 'Required when the organization has several settlement accounts.' }),
    metadata: metadataField,
  })
  .strict()
  .openapi('Authorize', {
    example: { token: exampleId('token'), amount: 1250, currency: 'USD', direction: 'cash_in', metadata: { order_id: 'order-1234' } },
  });
export type AuthorizeBody = z.infer<typeof authorizeBody>;
