import { bankAccountSchema } from '../bankAccounts/contract';
import { z } from '../zod';
import { rateSchema, RETURN_RATE_WINDOW_DAYS } from './returnRates';

/** The `data` of the ACH rail's events (SPEC §25), as src/ach/returnsApply.ts and returnRates.ts record them. */

const returnFields = {
  trace_number: z.string().openapi({ description: 'The returned entry’s trace number (15 digits).', example: '091000010000042' }),
  code: z.string().openapi({ description: 'The NACHA return code.', example: 'R01' }),
  reason: z.string().openapi({ description: 'The return code’s NACHA title.', example: 'Insufficient Funds' }),
};

export const achEntryReturnedSchema = z
  .object({
    id: z.string().openapi({ description: 'The ACH entry (ache_…).' }),
    ...returnFields,
    transaction_id: z.string().nullable().openapi({ description: 'The payment the entry moved, for a user’s entry.' }),
    transfer_id: z.string().nullable().openapi({ description: 'The transfer, for an operator’s (CCD) entry.' }),
    dispute_id: z.string().nullable().openapi({ description: 'The dispute the return became, when it moved money.' }),
  })
  .openapi('AchEntryReturned');

export const achTransferReturnedSchema = z
  .object({
    id: z.string().openapi({ description: 'The transfer (tr_…) whose CCD entry came back.' }),
    entry_id: z.string(),
    ...returnFields,
  })
  .openapi('AchTransferReturned');

export const achReturnRateExceededSchema = z
  .object({
    id: z.string().openapi({ description: '`<organization id>:<kind>`.' }),
    kind: z.enum(['unauthorized', 'administrative', 'overall']),
    ...rateSchema.shape,
    debits: z.number().int(),
    window_days: z.literal(RETURN_RATE_WINDOW_DAYS),
  })
  .openapi('AchReturnRateExceeded');

export const bankAccountUpdatedSchema = z
  .object({
    ...bankAccountSchema.shape,
    change_code: z.string().openapi({ description: 'The notification of change’s code (C01–C07).', example: 'C01' }),
  })
  .openapi('BankAccountChange');
