import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { forEachBounded } from '../src/concurrency';
import { readWithAchcli } from '../test/support/achcli';
import type { SftpBank } from './bank';
import { sleep, type Json } from './http';
import type { Model } from './model';
import type { World } from './workload';

/**
 * The files the bank received, checked as the bank would read them: every ACH file the service built
 * (`admin ach files --download`, the exact bytes of each), read and validated by moov-io/ach's achcli
 * (an independent NACHA reader, `npm run tools`). Each entry names its payment by the last 15 characters of its
 * transaction's id (a transfer's, for an operator's CCD entry) in its Individual Identification Number.
 *
 * What the model expects on the rail (SPEC §24): a PPD debit for each approved cash_in with a bank account,
 * a PPD credit for each cash_out with one and for each refund of an intent with one; each in exactly one
 * file, for its amount; and no entry for anything else.
 */

/** Entries still queued at the end of the drain (a last transfer's credits) reach a file within a few windows. */
const FILED_DEADLINE_MS = 60_000;
/** achcli processes at once. */
const READS_AT_ONCE = 4;

type Admin = World['admin'];

interface FiledEntry {
  fileId: string;
  amount: number;
}

/** What an entry of `id` (a transaction's or a transfer's) carries in its 15-character Individual Identification Number: the id's last 15 characters. */
function identificationOf(id: string): string {
  return id.slice(-15);
}

/** The model's payments that must each be one entry, by their identification: the amount. */
function expectedEntries(model: Model): Map<string, { id: string; amount: number }> {
  const expected = new Map<string, { id: string; amount: number }>();
  const bankIntent = (intentId: string | undefined) =>
    intentId !== undefined && (model.intents.get(intentId)?.bankAccountId ?? null) !== null;
  for (const txn of model.transactions.values()) {
    const onRail =
      (txn.type === 'intent' && bankIntent(txn.sourceId)) ||
      (txn.type === 'refund' && bankIntent(model.refunds.get(txn.sourceId)?.intentId));
    if (onRail) expected.set(identificationOf(txn.id), { id: txn.id, amount: txn.amount });
  }
  return expected;
}

/** One downloaded file's entries as achcli reads them; null (and an anomaly) when achcli refuses the file. */
async function readFile(model: Model, file: Json): Promise<Array<{ identification: string; amount: number }> | null> {
  try {
    const entries = (await readWithAchcli(fs.readFileSync(file.path as string))).batches.flatMap((batch) => batch.entryDetails);
    if (entries.length !== file.entry_count)
      model.anomaly(
        `ACH file ${file.id as string} (${file.file_name as string}): achcli reads ${entries.length} entries, the service lists ${file.entry_count as number}`,
      );
    return entries.map((entry) => ({ identification: entry.identificationNumber.trim(), amount: entry.amount }));
  } catch (error) {
    model.anomaly(
      `ACH file ${file.id as string} (${file.file_name as string}) is not valid for moov-io/ach: ${(error as Error).message.slice(0, 300)}`,
    );
    return null;
  }
}

/** Every downloaded file's entries, by identification, in file order. */
async function filedEntries(model: Model, files: Json[]): Promise<Map<string, FiledEntry[]>> {
  const read = new Map<Json, Array<{ identification: string; amount: number }> | null>();
  await forEachBounded(files, READS_AT_ONCE, async (file) => {
    read.set(file, await readFile(model, file));
  });
  const filed = new Map<string, FiledEntry[]>();
  for (const file of files) {
    for (const entry of read.get(file) ?? []) {
      const named = filed.get(entry.identification) ?? [];
      named.push({ fileId: file.id as string, amount: entry.amount });
      filed.set(entry.identification, named);
    }
  }
  return filed;
}

/**
 * Every file with its exact bytes (one `admin ach files --download` into a directory of its own under `dir`),
 * again until every expected payment has an entry in one, or the deadline (what is missing is then reported).
 */
async function downloadFiles(admin: Admin, model: Model, dir: string, expected: number): Promise<Json[]> {
  const deadline = Date.now() + FILED_DEADLINE_MS;
  for (let attempt = 1; ; attempt++) {
    const into = path.join(dir, String(attempt));
    fs.mkdirSync(into);
    const listed = await admin(['ach', 'files', '--download', into]);
    if (listed.code !== 0) {
      model.anomaly(`admin ach files --download failed: ${listed.text.slice(0, 300)}`);
      return [];
    }
    const files = (listed.json.files ?? []) as Json[];
    const entries = files.reduce((sum, file) => sum + (file.entry_count as number), 0);
    if (entries >= expected || Date.now() > deadline) return files;
    await sleep(2_000);
  }
}

/**
 * With the SFTP bank: what it received is what the service says it delivered, byte for byte, each file once
 * under its one name; a file not delivered yet (built by the last windows) is not the bank's.
 */
async function compareWithBank(bank: SftpBank, model: Model, files: Json[]): Promise<void> {
  await bank.readOutbound(model, null);
  const listed = new Set<string>();
  for (const file of files) {
    listed.add(file.file_name as string);
    const received = bank.received.get(file.file_name as string);
    if (file.status === 'built') continue;
    if (!received)
      model.anomaly(`ACH file ${file.id as string} is ${file.status as string}, and the bank never received ${file.file_name as string}`);
    else if (!received.equals(fs.readFileSync(file.path as string)))
      model.anomaly(`the bank received other bytes under ${file.file_name as string} than the service's file ${file.id as string}`);
  }
  for (const name of bank.received.keys())
    if (!listed.has(name)) model.anomaly(`the bank received ${name}, a file the service does not list`);
}

/**
 * A transfer's CCD entries (SPEC §24, with an operator bank account): one, and one more for each time the operator
 * presented it again after a return (sim/operatorDesk.ts), each of the transfer's amount.
 */
function checkTransferEntries(model: Model, transferIds: readonly string[], filed: Map<string, FiledEntry[]>): void {
  for (const id of transferIds) {
    const entries = filed.get(identificationOf(id)) ?? [];
    const again = model.presented.get(id) ?? 0;
    if ((entries.length > 0 || again > 0) && entries.length !== 1 + again)
      model.anomaly(
        `transfer ${id} has ${entries.length} entries in ACH files, presented again ${again} times: ${entries.map((e) => e.fileId).join(', ')}`,
      );
    if (new Set(entries.map((e) => e.amount)).size > 1)
      model.anomaly(`transfer ${id}'s entries are of amounts ${entries.map((e) => e.amount).join(', ')}`);
  }
}

/** The check; answers the number of files read and of the entries in them. */
export async function checkAchFiles(
  admin: Admin,
  model: Model,
  transferIds: readonly string[],
  bank: SftpBank | null,
): Promise<{ files: number; entries: number }> {
  const expected = expectedEntries(model);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sim-ach-'));
  let files: Json[];
  let filed: Map<string, FiledEntry[]>;
  try {
    const presentments = [...model.presented.values()].reduce((sum, n) => sum + n, 0);
    files = await downloadFiles(admin, model, dir, expected.size + presentments);
    filed = await filedEntries(model, files);
    if (bank) await compareWithBank(bank, model, files);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  for (const [identification, want] of expected) {
    const [got, ...more] = filed.get(identification) ?? [];
    if (!got) model.anomaly(`transaction ${want.id} is on the rail but in no ACH file`);
    else if (got.amount !== want.amount)
      model.anomaly(`transaction ${want.id} of ${want.amount} has an entry of ${got.amount} (file ${got.fileId})`);
    for (const again of more)
      model.anomaly(`transaction ${want.id} has an entry in ACH file ${got!.fileId} and another in ${again.fileId}`);
  }
  checkTransferEntries(model, transferIds, filed);
  const transfers = new Set(transferIds.map(identificationOf));
  for (const [identification, entries] of filed) {
    if (!expected.has(identification) && !transfers.has(identification))
      model.anomaly(`ACH file ${entries[0]!.fileId} holds an entry for …${identification}, no payment of the model's or transfer`);
  }
  return { files: files.length, entries: [...filed.values()].reduce((sum, entries) => sum + entries.length, 0) };
}
