import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ensureAchcli } from '../../ops/goTools';

/**
 * moov-io/ach's achcli as the independent reader of our NACHA files (STYLE: external formats are checked by
 * someone else's code). `-reformat=json` reads and validates a file; `-reformat=ach` writes one from JSON.
 */
const run = promisify(execFile);

/** The parts of moov-io/ach's JSON the tests compare (its own field names). */
export interface MoovEntry {
  transactionCode: number;
  RDFIIdentification: string;
  checkDigit: string;
  DFIAccountNumber: string;
  amount: number;
  identificationNumber: string;
  individualName: string;
  discretionaryData: string;
  addendaRecordIndicator?: number;
  traceNumber: string;
  addenda98?: Record<string, unknown> | null;
  addenda99?: Record<string, unknown> | null;
}
export interface MoovBatch {
  batchHeader: Record<string, string | number>;
  entryDetails: MoovEntry[];
  batchControl: Record<string, string | number>;
}
export interface MoovFile {
  fileHeader: Record<string, string>;
  batches: MoovBatch[];
  fileControl: Record<string, number>;
}

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'achcli-'));
let counter = 0;

function scratchFile(extension: string): string {
  counter += 1;
  return path.join(scratch, `${process.pid}-${counter}.${extension}`);
}

/** Reads (and validates) a NACHA file with achcli; rejects with achcli's own message when it refuses it. */
export async function readWithAchcli(text: string | Buffer): Promise<MoovFile> {
  const file = scratchFile('ach');
  fs.writeFileSync(file, text);
  try {
    const { stdout } = await run(await ensureAchcli(), ['-reformat=json', file], { maxBuffer: 1 << 30 });
    return JSON.parse(stdout) as MoovFile;
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`achcli refused the file: ${failed.stderr || failed.stdout || failed.message}`);
  } finally {
    fs.rmSync(file, { force: true });
  }
}

/** Writes a NACHA file from moov-io/ach's JSON with achcli. */
export async function writeWithAchcli(json: unknown): Promise<string> {
  const file = scratchFile('json');
  fs.writeFileSync(file, JSON.stringify(json));
  try {
    const { stdout } = await run(await ensureAchcli(), ['-reformat=ach', file], { maxBuffer: 1 << 30 });
    return stdout;
  } finally {
    fs.rmSync(file, { force: true });
  }
}
