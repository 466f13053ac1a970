import { z } from '../zod';

/** SPEC §24 GET /transaction/{id}/ach and GET /transfer/{id}/ach: a payment's ACH entry, never its account number. */
export const achEntrySchema = z
  .object({
    trace_number: z
      .string()
      .nullable()
      .openapi({ description: "The ODFI's 8 routing digits and a 7-digit sequence, unique forever; null until the entry is in a file." }),
    sec_code: z.enum(['PPD', 'CCD']).openapi({ description: "PPD: a user's account; CCD: the operator's account (a transfer)." }),
    transaction_code: z
      .union([z.literal(22), z.literal(27), z.literal(32), z.literal(37)])
      .openapi({ description: '22/27 checking credit/debit, 32/37 savings credit/debit.' }),
    amount: z.number().int().openapi({ description: 'Cents.' }),
    effective_date: z.string().nullable().openapi({ format: 'date', description: "The batch's effective entry date; null until filed." }),
    file_id: z.string().nullable().openapi({ description: 'The ACH file it is in (operator CLI `ach file show`); null while queued.' }),
    status: z.enum(['queued', 'in_file', 'delivered', 'settled', 'returned']),
    return: z
      .object({ code: z.string(), reason: z.string() })
      .nullable()
      .openapi({ description: "The bank's return (SPEC §25), when the entry was returned." }),
    created_at: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('AchEntry', {
    example: {
      trace_number: '091000010000042',
      sec_code: 'PPD',
      transaction_code: 27,
      amount: 1999,
      effective_date: '2026-11-27',
      file_id: 'achf_0b6f0c6a2d3e4f5a8b9c0d1e2f3a4b5c',
      status: 'delivered',
      return: null,
      created_at: '2026-11-27T14:03:12.511Z',
    },
  });
export type AchEntry = z.infer<typeof achEntrySchema>;
