import { Filters, keysetPage, renderPage, type ListPage } from '../db/paging';
import type { Queryable } from '../db/pool';
import { pageQuery, z } from '../zod';
import { ADMINISTRATIVE_CODES, codeTitle, UNAUTHORIZED_CODES } from './returnCodes';

/**
 * SPEC §25 for people: the organization's returns and notifications of change as applied (GET /ach/returns), and
 * what the bank sent that could not be applied (GET /ach/exceptions). Both read what the inbound files wrote
 * (ach_entry_returns, ach_exceptions); neither changes anything.
 */

const exampleId = (prefix: string) => `${prefix}_0b6f0c6a2d3e4f5a8b9c0d1e2f3a4b5c`;
const traceNumber = z.string().openapi({ description: '15 digits.', example: '011000010000042' });

const inboundFileSchema = z
  .object({
    id: z.string().openapi({ example: exampleId('achi') }),
    file_name: z.string().openapi({ description: 'The name it arrived under (the first, when the same bytes came again).' }),
    source: z.enum(['sftp', 'cli', 'sandbox']).openapi({
      description: "`sftp`: the bank's inbound/ directory; `cli`: `ach inbound import`; `sandbox`: the simulated bank.",
    }),
  })
  .openapi('AchInboundFileRef', { description: 'The return or notification-of-change file an item came in.' });

export const APPLIED = ['dispute_lost', 'bank_account_disabled', 'user_suspended', 'bank_account_corrected', 'exception'] as const;
type Applied = (typeof APPLIED)[number];

export const achReturnRecordSchema = z
  .object({
    id: z.string().openapi({ example: exampleId('achr') }),
    type: z.enum(['return', 'notification_of_change']).openapi({
      description:
        '`return`: the entry came back (addenda 99, an R code); `notification_of_change`: the bank corrected the account (addenda 98, a C code).',
    }),
    code: z.string().openapi({ example: 'R01' }),
    reason: z.string().openapi({ description: "The code's NACHA title.", example: 'Insufficient Funds' }),
    entry: z
      .object({
        id: z.string().openapi({ example: exampleId('ache') }),
        trace_number: traceNumber,
        sec_code: z.enum(['PPD', 'CCD']),
        transaction_code: z.number().int().openapi({ description: '22/27 checking credit/debit, 32/37 savings credit/debit.' }),
        amount: z.number().int().openapi({ description: 'Cents.' }),
        transaction_id: z.string().nullable().openapi({ description: 'The payment it moved (a PPD entry); null for a transfer.' }),
        transfer_id: z.string().nullable().openapi({ description: 'The transfer it moved (a CCD entry); null for a payment.' }),
      })
      .openapi({ description: 'Our entry the bank answered, matched by its original trace number.' }),
    return_trace_number: traceNumber.openapi({ description: "The trace number of the bank's return or change entry." }),
    inbound_file: inboundFileSchema,
    applied: z.array(z.enum(APPLIED)).openapi({
      description:
        'What it did (SPEC §25), in this order: `dispute_lost` (a returned debit: a lost dispute with its cash_out `dispute` transaction), `bank_account_disabled` (R02, R03, R04), `user_suspended` (R05, R07, R10, R11, R29, R51, when the user was enabled), `bank_account_corrected` (a notification of change), `exception` (an operator acts: a returned transfer or credit, an intent already disputed or refunded; see `exception_id`). Empty: nothing beyond the return rates (R01, R09 of an entry with nothing left to dispute).',
      example: ['dispute_lost'],
    }),
    dispute_id: z.string().nullable().openapi({ description: 'The lost dispute a returned debit became.' }),
    dispute_transaction_id: z.string().nullable().openapi({ description: "That dispute's cash_out transaction." }),
    bank_account_id: z
      .string()
      .nullable()
      .openapi({ description: 'The bank account of the entry (disabled or corrected, per `applied`).' }),
    user_id: z.string().nullable().openapi({ description: "The bank account's user." }),
    exception_id: z
      .string()
      .nullable()
      .openapi({ description: 'The exception recorded with it (GET /ach/exceptions), when `applied` says `exception`.' }),
    created_at: z.string().openapi({ format: 'date-time', description: 'When it was applied.' }),
  })
  .openapi('AchReturnRecord', {
    description: 'A return or notification of change the bank sent about one of your entries, as it was applied, once.',
  });
export type AchReturnRecord = z.infer<typeof achReturnRecordSchema>;

export const achReturnListQuery = pageQuery.extend({
  type: z.enum(['return', 'notification_of_change']).optional().openapi({ description: 'Only returns, or only notifications of change.' }),
});
export type AchReturnListQuery = z.infer<typeof achReturnListQuery>;

export const EXCEPTION_KINDS = ['unparseable_file', 'unknown_trace', 'foreign_odfi', 'transfer_returned', 'not_applicable'] as const;

export const achExceptionSchema = z
  .object({
    id: z.string().openapi({ example: exampleId('achx') }),
    kind: z.enum(EXCEPTION_KINDS).openapi({
      description:
        "`unparseable_file` (nothing in the file applied; `detail` names the line and field), `unknown_trace` (no entry has the original trace number), `foreign_odfi` (the trace number is not our bank's), `transfer_returned` (a CCD entry came back: an operator acts), `not_applicable` (an entry never sent, an intent already disputed or refunded, a returned credit, a change not applied).",
    }),
    matched: z.boolean().openapi({
      description:
        'Whether it named an entry of yours. False: it matched no entry of any organization (a file that does not parse, an unknown or foreign trace number); such items are shown to every organization of the deployment, as any of them may be missing a return.',
    }),
    code: z.string().nullable().openapi({ description: 'The return or change code, when the item carried one.', example: 'R01' }),
    reason: z.string().nullable().openapi({ description: "The code's NACHA title." }),
    trace_number: traceNumber.nullable().openapi({ description: 'The original trace number the item named.' }),
    transaction_id: z.string().nullable().openapi({ description: 'The payment of the matched entry.' }),
    transfer_id: z.string().nullable().openapi({ description: 'The transfer of the matched entry.' }),
    detail: z.string().openapi({
      description:
        'What was wrong, for a person; never an account number. Of an item that matched no entry, what the parser quoted from the file is left out (the operator CLI `ach exceptions` shows it).',
    }),
    operator_action: z
      .object({
        action: z.enum(['presented_again', 'settled_outside']).openapi({
          description:
            '`presented_again`: the transfer presented again in a new entry (operator CLI `ach transfer represent`); `settled_outside`: its money moved outside ACH, recorded with a reference (`ach transfer settled-outside`).',
        }),
        entry_id: z.string().nullable().openapi({ description: 'Of `presented_again`: the new entry.' }),
        reference: z.string().nullable().openapi({ description: "Of `settled_outside`: the outside payment's reference." }),
        at: z.string().openapi({ format: 'date-time' }),
      })
      .nullable()
      .openapi({
        description:
          'Of a `transfer_returned` exception, what the operator did about it (SPEC §25: nothing moves until an operator acts); null while it waits for one, and for every other kind.',
      }),
    inbound_file: inboundFileSchema.extend({
      status: z.enum(['applied', 'rejected']).openapi({ description: '`rejected`: the file did not parse and nothing in it applied.' }),
      line: z.number().int().openapi({ description: 'The record (1-based) of the file; 0 for the file as a whole.' }),
    }),
    created_at: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('AchException', { description: 'Something the bank sent that was kept but not applied (SPEC §25): never dropped.' });
export type AchException = z.infer<typeof achExceptionSchema>;

export const achExceptionListQuery = pageQuery.extend({
  kind: z.enum(EXCEPTION_KINDS).optional(),
});
export type AchExceptionListQuery = z.infer<typeof achExceptionListQuery>;

const ISO = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

interface ReturnRow {
  id: string;
  addenda_type: '99' | '98';
  code: string;
  return_trace: string;
  created_at: string;
  dispute_id: string | null;
  entry_id: string;
  trace_number: string;
  sec_code: 'PPD' | 'CCD';
  transaction_code: number;
  amount: number;
  transaction_id: string | null;
  transfer_id: string | null;
  bank_account_id: string | null;
  user_id: string | null;
  inbound_file_id: string;
  file_name: string;
  source: 'sftp' | 'cli' | 'sandbox';
  dispute_transaction_id: string | null;
  user_suspended: boolean;
}

/**
 * `user_suspended`: the user's status history holds enabled → suspended at the return's instant. The return's
 * transaction writes both with one clock (returnsApply.ts), and a user who was not enabled is left as they were,
 * so the rule alone cannot say whether it suspended anyone.
 */
const RETURN_SELECT = `r.id, r.addenda_type, r.code, r.return_trace, ${ISO('r.created_at')} AS created_at, r.dispute_id,
  e.id AS entry_id, e.trace_number, e.sec_code, e.transaction_code::int AS transaction_code, e.amount_cents::float8 AS amount,
  e.transaction_id, e.transfer_id, e.bank_account_id, ba.user_id, f.id AS inbound_file_id, f.file_name, f.source,
  (SELECT t.id FROM transactions t WHERE t.source_id = r.dispute_id AND t.type = 'dispute' AND t.direction = 'cash_out'
    ORDER BY t.created_at LIMIT 1) AS dispute_transaction_id,
  EXISTS (SELECT 1 FROM user_status_history h WHERE h.user_id = ba.user_id AND h.from_status = 'enabled'
           AND h.to_status = 'suspended' AND h.changed_at = r.created_at) AS user_suspended`;

const RETURN_FROM = `ach_entry_returns r JOIN ach_entries e ON e.id = r.entry_id JOIN ach_inbound_files f ON f.id = r.inbound_file_id
  LEFT JOIN bank_accounts ba ON ba.id = e.bank_account_id`;

function appliedOf(row: ReturnRow, exceptionId: string | null): Applied[] {
  const isReturn = row.addenda_type === '99';
  const applied: Applied[] = [];
  if (row.dispute_id) applied.push('dispute_lost');
  if (isReturn && row.bank_account_id && ADMINISTRATIVE_CODES.has(row.code)) applied.push('bank_account_disabled');
  if (isReturn && row.user_suspended && UNAUTHORIZED_CODES.has(row.code)) applied.push('user_suspended');
  if (!isReturn) applied.push('bank_account_corrected');
  if (exceptionId) applied.push('exception');
  return applied;
}

/** The exceptions recorded beside applied returns (a returned transfer or credit): one read for the page. */
async function exceptionsBeside(db: Queryable, rows: ReturnRow[]): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  if (rows.length === 0) return found;
  const { rows: exceptions } = await db.query<{ id: string; entry_id: string; inbound_file_id: string; code: string }>(
    `SELECT x.id, x.entry_id, x.inbound_file_id, x.code FROM ach_exceptions x
      WHERE (x.entry_id, x.inbound_file_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))
      ORDER BY x.created_at, x.id`,
    [rows.map((r) => r.entry_id), rows.map((r) => r.inbound_file_id)],
  );
  for (const x of exceptions) {
    const key = `${x.entry_id} ${x.inbound_file_id} ${x.code}`;
    if (!found.has(key)) found.set(key, x.id);
  }
  return found;
}

async function renderReturns(db: Queryable, rows: ReturnRow[]): Promise<AchReturnRecord[]> {
  const exceptions = await exceptionsBeside(db, rows);
  return rows.map((row) => {
    const exceptionId = exceptions.get(`${row.entry_id} ${row.inbound_file_id} ${row.code}`) ?? null;
    return {
      id: row.id,
      type: row.addenda_type === '99' ? 'return' : 'notification_of_change',
      code: row.code,
      reason: codeTitle(row.code),
      entry: {
        id: row.entry_id,
        trace_number: row.trace_number,
        sec_code: row.sec_code,
        transaction_code: row.transaction_code,
        amount: row.amount,
        transaction_id: row.transaction_id,
        transfer_id: row.transfer_id,
      },
      return_trace_number: row.return_trace,
      inbound_file: { id: row.inbound_file_id, file_name: row.file_name, source: row.source },
      applied: appliedOf(row, exceptionId),
      dispute_id: row.dispute_id,
      dispute_transaction_id: row.dispute_transaction_id,
      bank_account_id: row.bank_account_id,
      user_id: row.user_id,
      exception_id: exceptionId,
      created_at: row.created_at,
    };
  });
}

/** GET /ach/returns: newest first, a page at a time (ach_entry_returns_of_org). */
export async function listAchReturns(db: Queryable, organizationId: string, query: AchReturnListQuery): Promise<ListPage<AchReturnRecord>> {
  const filters = new Filters('r.organization_id', organizationId).optional(
    'r.addenda_type = ?',
    query.type === undefined ? undefined : query.type === 'return' ? '99' : '98',
  );
  const page = await keysetPage<ReturnRow>(db, {
    select: RETURN_SELECT,
    from: RETURN_FROM,
    table: 'ach_entry_returns',
    alias: 'r',
    filters,
    page: query,
  });
  return renderPage(page, (rows) => renderReturns(db, rows));
}

interface ExceptionRow {
  id: string;
  kind: AchException['kind'];
  entry_id: string | null;
  code: string | null;
  trace_number: string | null;
  transaction_id: string | null;
  transfer_id: string | null;
  detail: string;
  inbound_file_id: string;
  file_name: string;
  source: 'sftp' | 'cli' | 'sandbox';
  status: 'applied' | 'rejected';
  line: number;
  created_at: string;
  operator_action: AchException['operator_action'];
}

/**
 * An item that matched no entry is shown to every organization, so what its detail quotes from the file (the parser
 * quotes a field it could not read, and a shifted record can put another field's characters there) is left out;
 * the operator CLI `ach exceptions` shows it whole.
 */
function detailOf(row: ExceptionRow): string {
  return row.entry_id === null ? row.detail.replace(/"[^"]*"/g, '(a value left out)') : row.detail;
}

function renderException(row: ExceptionRow): AchException {
  return {
    id: row.id,
    kind: row.kind,
    matched: row.entry_id !== null,
    code: row.code,
    reason: row.code === null ? null : codeTitle(row.code),
    trace_number: row.trace_number,
    transaction_id: row.transaction_id,
    transfer_id: row.transfer_id,
    detail: detailOf(row),
    operator_action: row.operator_action,
    inbound_file: { id: row.inbound_file_id, file_name: row.file_name, source: row.source, status: row.status, line: row.line },
    created_at: row.created_at,
  };
}

/**
 * GET /ach/exceptions: the organization's exceptions and those that name no organization (nothing matched, so
 * no one else is told), newest first, a page at a time (ach_exceptions_recent).
 */
export async function listAchExceptions(
  db: Queryable,
  organizationId: string,
  query: AchExceptionListQuery,
): Promise<ListPage<AchException>> {
  const filters = new Filters('x.organization_id', organizationId, { withUnowned: true }).optional('x.kind = ?', query.kind);
  const page = await keysetPage<ExceptionRow>(db, {
    select: `x.id, x.kind, x.entry_id, x.code, x.trace_number, e.transaction_id, e.transfer_id, x.detail, f.id AS inbound_file_id,
             f.file_name, f.source, f.status, x.line, ${ISO('x.created_at')} AS created_at,
             CASE WHEN again.id IS NOT NULL
                  THEN json_build_object('action', 'presented_again', 'entry_id', again.id, 'reference', NULL, 'at', ${ISO('again.created_at')})
                  WHEN o.entry_id IS NOT NULL
                  THEN json_build_object('action', 'settled_outside', 'entry_id', NULL, 'reference', o.reference, 'at', ${ISO('o.created_at')})
             END AS operator_action`,
    // The operator's action on a returned transfer's entry: at most one of each (`represents` and the record's
    // entry are unique), and never both (migrations/0051).
    from: `ach_exceptions x JOIN ach_inbound_files f ON f.id = x.inbound_file_id LEFT JOIN ach_entries e ON e.id = x.entry_id
           LEFT JOIN ach_entries again ON x.kind = 'transfer_returned' AND again.represents = x.entry_id
           LEFT JOIN ach_transfer_settled_outside o ON x.kind = 'transfer_returned' AND o.entry_id = x.entry_id`,
    table: 'ach_exceptions',
    alias: 'x',
    filters,
    page: query,
  });
  return renderPage(page, (rows) => rows.map(renderException));
}
