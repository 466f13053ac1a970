import { createHash, randomUUID } from 'node:crypto';
import { withTransaction, type Queryable } from '../db/pool';
import { sealAccountNumber } from '../bankAccounts/contract';
import type { AppDeps } from '../services';
import { checkReturnRateCrossings } from './returnRates';
import { NachaParseError, parseNachaFile, type ParsedNachaFile } from './parse';
import { applyContext, flushWrites, prefetchEntries, recordException, type ApplyContext, type EntryOutcome } from './returnsApply';
import { applyEntries } from './returnsBatch';

/**
 * SPEC §25: one file the bank sent back (returns, addenda 99; notifications of change, 98), ingested in ONE
 * database transaction: parse, match each entry by its original trace number, apply. A crash midway applies
 * nothing; a file whose bytes were seen before, under any name, changes nothing; a file that does not parse is
 * kept (sealed) with an exception and applies nothing. Concurrent ingests of the same bytes meet at a lock on
 * the hash: the second finds the first's row.
 */

export const INBOUND_LIMITS = {
  /** What downloadInbound reads at most; a file this size is far beyond a day's returns. */
  fileBytesMax: 256 * 1024 * 1024,
} as const;

export interface InboundFileSummary {
  id: string;
  file_name: string;
  sha256: string;
  status: 'applied' | 'rejected';
  source: Source;
  entry_count: number;
  returns_count: number;
  changes_count: number;
  exceptions_count: number;
  duplicates_count: number;
  received_at: string;
}

export interface IngestResult {
  /** `ingested` by this call; `already_ingested`: the same bytes came before (then `file` is that first one). */
  outcome: 'ingested' | 'already_ingested';
  file: InboundFileSummary;
}

const sha256Of = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

async function fileByHash(db: Queryable, sha256: string): Promise<InboundFileSummary | null> {
  const { rows } = await db.query<InboundFileSummary & { received_at: Date }>(
    `SELECT id, file_name, sha256, status, source, entry_count, returns_count, changes_count, exceptions_count, duplicates_count, received_at
       FROM ach_inbound_files WHERE sha256 = $1`,
    [sha256],
  );
  return rows[0] ? { ...rows[0], received_at: rows[0].received_at.toISOString() } : null;
}

/** Remembers an SFTP name with its size and hash, so the poll does not download it again (a name given new bytes is, once). */
export async function rememberInboundName(
  db: Queryable,
  input: { fileName: string; size: number; sha256: string; now: Date },
): Promise<void> {
  await db.query(
    `INSERT INTO ach_inbound_names (file_name, size_bytes, sha256, seen_at) VALUES ($1, $2, $3, $4) ON CONFLICT (file_name) DO UPDATE SET size_bytes = EXCLUDED.size_bytes, sha256 = EXCLUDED.sha256, seen_at = EXCLUDED.seen_at`,
    [input.fileName, input.size, input.sha256, input.now],
  );
}

type Source = 'sftp' | 'cli' | 'sandbox';

export async function ingestInboundFile(
  deps: AppDeps,
  input: { fileName: string; bytes: Buffer; source: Source; now: Date },
): Promise<IngestResult> {
  if (input.bytes.length > INBOUND_LIMITS.fileBytesMax)
    throw new Error(`${input.fileName}: ${input.bytes.length} bytes, at most ${INBOUND_LIMITS.fileBytesMax}`);
  const afterCommits: Array<() => void> = [];
  const result = await withTransaction(deps.pool, (tx) => ingestWithin(tx, deps, afterCommits, input));
  for (const run of afterCommits) run();
  return result;
}

/**
 * ingestInboundFile inside the caller's transaction (the simulated bank's route runs in its request's): `parsed`
 * stands for the parse when the caller already holds the file's contents (the simulated bank's one return).
 */
export async function ingestWithin(
  tx: Queryable,
  deps: AppDeps,
  afterCommits: Array<() => void>,
  input: { fileName: string; bytes: Buffer; source: Source; now: Date; parsed?: ParsedNachaFile },
): Promise<IngestResult> {
  const sha256 = sha256Of(input.bytes);
  await tx.query(`SELECT pg_advisory_xact_lock(hashtext('ach_inbound ' || $1))`, [sha256]);
  if (input.source === 'sftp')
    await rememberInboundName(tx, { fileName: input.fileName, size: input.bytes.length, sha256, now: input.now });
  const seen = await fileByHash(tx, sha256);
  if (seen) return { outcome: 'already_ingested' as const, file: seen };
  const fileId = `achi_${randomUUID().replaceAll('-', '')}`;
  const ctx = applyContext({ tx, deps, fileId, now: input.now, afterCommits });
  let parsed: ParsedNachaFile | null = input.parsed ?? null;
  try {
    parsed ??= parseNachaFile(input.bytes);
  } catch (error) {
    if (!(error instanceof NachaParseError)) throw error;
    recordException(ctx, { kind: 'unparseable_file', line: error.line, detail: error.message });
  }
  const counts = parsed ? await applyFile(ctx, parsed) : { entries: 0, returns: 0, changes: 0, exceptions: 1, duplicates: 0 };
  await flushWrites(ctx);
  for (const organizationId of [...ctx.returnedOrganizations].sort()) await checkReturnRateCrossings(tx, organizationId, input.now);
  await tx.query(
    `INSERT INTO ach_inbound_files (id, file_name, sha256, size_bytes, bytes_sealed, status, source, entry_count, returns_count, changes_count,
                                    exceptions_count, duplicates_count, received_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
    [
      fileId,
      input.fileName,
      sha256,
      input.bytes.length,
      sealAccountNumber(deps.config, input.bytes.toString('latin1'), { table: 'ach_inbound_files', id: fileId }),
      parsed ? 'applied' : 'rejected',
      input.source,
      counts.entries,
      counts.returns,
      counts.changes,
      counts.exceptions,
      counts.duplicates,
      input.now,
    ],
  );
  return { outcome: 'ingested' as const, file: (await fileByHash(tx, sha256))! };
}

/** Every entry of the file, in file order, each applied or kept as an exception (set-based: src/ach/returnsBatch.ts). */
async function applyFile(ctx: ApplyContext, parsed: ParsedNachaFile) {
  const counts = { entries: 0, returns: 0, changes: 0, exceptions: 0, duplicates: 0 };
  const tally: Record<EntryOutcome, keyof typeof counts> = {
    returned: 'returns',
    changed: 'changes',
    exception: 'exceptions',
    duplicate: 'duplicates',
  };
  const entries = parsed.batches.flatMap((batch) => batch.entries);
  const traces = entries.flatMap((entry) =>
    entry.addenda.flatMap((a) => (a.typeCode === '99' || a.typeCode === '98' ? [a.originalTraceNumber] : [])),
  );
  await prefetchEntries(ctx, traces);
  for (const outcome of await applyEntries(ctx, entries)) {
    counts.entries += 1;
    counts[tally[outcome]] += 1;
  }
  return counts;
}
