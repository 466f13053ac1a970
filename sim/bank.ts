import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { readWithAchcli } from '../test/support/achcli';
import { bankFile } from '../test/support/bankFiles';
import { startSftpServer, type SftpServer } from '../test/support/sftpServer';
import { sleep, type Json } from './http';
import type { Model } from './model';
import type { Rng } from './rng';
import type { World } from './workload';

/**
 * `--bank sftp` (docs/reliability.md): the service's bank as a real OpenSSH SFTP server on this machine, and the
 * bank's side of it played from outside, as the ODFI would. The service (a sandbox with ACH_SFTP_URL set, SPEC
 * §24) puts its files in `outbound/`; the bank reads each with moov-io/ach's achcli and answers some of the PPD
 * entries with return and notification-of-change files that achcli writes (test/support/bankFiles.ts) into
 * `inbound/`, where the service's inbound schedule finds them (§25). Like a real bank it sometimes sends a
 * file twice under another name, or an item again in a later file; each must apply once.
 *
 * The bank's choices come from its own stream of the seed; which entries they fall on depends on what the
 * service filed by then (timing), as the workload's targets do.
 */

/** How often the bank looks in outbound/ and sends what is due. */
const TICK_MS = 1_000;
/** Of each PPD entry received: returned, or corrected by a notification of change. */
const RETURN_CHANCE = 0.08;
const CHANGE_CHANCE = 0.02;
/**
 * Of each CCD entry received (a transfer's, on the operator's bank account, SPEC §24): returned, R01 for a
 * collection (the operator's account short), R03 for a disbursement. A transfer is a few entries a run, so the
 * chance is high; the operator then presents it again (sim/operatorDesk.ts).
 */
const TRANSFER_RETURN_CHANCE = 0.3;
/** Of each item sent: sent again in a later file (the same return twice: a duplicate). */
const REPEAT_CHANCE = 0.1;
/** Of each answer planned: the next return file is dropped again under another name (the same bytes). */
const DUPLICATE_FILE_CHANCE = 0.25;
/** A return or change goes out this long after the bank received the entry. */
const ANSWER_AFTER_MS: [number, number] = [3_000, 12_000];
const ITEMS_PER_FILE = 50;
/**
 * A return file at most this often (a real bank sends a few a day): what is due meanwhile waits for the next.
 * One every second kept the service's poll (a file per step, each an SFTP login, a download and a transaction)
 * minutes behind on this 2-core box under the load, which is the bank's pace, not the service's liveness.
 */
const FILE_EVERY_MS = 10_000;
/**
 * After the load every item sent must be applied (GET /ach/returns) or kept as an exception: the wait fails when
 * none more was for SIM_BANK_STALL_SECONDS (stuck), or after SIM_BANK_APPLIED_SECONDS in all (too slow even so).
 */
const APPLIED_STALL_MS = Number(process.env.SIM_BANK_STALL_SECONDS ?? 120) * 1000;
const APPLIED_DEADLINE_MS = Number(process.env.SIM_BANK_APPLIED_SECONDS ?? 600) * 1000;
const DEBIT_CODES = ['R01', 'R01', 'R01', 'R01', 'R02', 'R03', 'R08', 'R10', 'R16', 'R20'];
const CREDIT_CODES = ['R02', 'R03', 'R04'];
const DISABLING = new Set(['R02', 'R03', 'R04']);
/** Exception kinds that can only mean a wrong file, the bank's or the service's reading of it. */
const WRONG = new Set(['unparseable_file', 'unknown_trace', 'foreign_odfi']);

interface Item {
  /** The original entry's trace number. */
  trace: string;
  code: string;
  amount: number;
  credit: boolean;
  corrected?: string;
  sec?: 'PPD' | 'CCD';
}

export interface BankCounts {
  files_received: number;
  entries_received: number;
  return_files: number;
  returns_sent: number;
  /** Of returns_sent, of a transfer's CCD entry. */
  transfer_returns_sent: number;
  changes_sent: number;
  items_sent_again: number;
  files_sent_twice: number;
  returns_applied: number;
  changes_applied: number;
}

export class SftpBank {
  readonly counts: BankCounts = {
    files_received: 0,
    entries_received: 0,
    return_files: 0,
    returns_sent: 0,
    transfer_returns_sent: 0,
    changes_sent: 0,
    items_sent_again: 0,
    files_sent_twice: 0,
    returns_applied: 0,
    changes_applied: 0,
  };
  /** Every file the service put in outbound/, by name, byte for byte. */
  readonly received = new Map<string, Buffer>();
  /** Every item sent, by its entry's trace number and kind (R or C), the first time. */
  private readonly sent = new Map<string, Item>();
  private readonly due: Array<{ at: number; item: Item }> = [];
  private readonly again: Array<{ at: number; name: string; text: string }> = [];
  private odfi: string | null = null;
  private files = 0;
  private lastFileAt = 0;
  /** Set by a plan: the next return file is dropped a second time, under another name. */
  private duplicateNext = false;

  private constructor(readonly server: SftpServer) {}

  static async start(): Promise<SftpBank> {
    return new SftpBank(await startSftpServer());
  }

  /** Whether the bank takes a login and lists its directory (the sftp client), within 5 s. */
  answers(): Promise<boolean> {
    const args = ['-q', '-b', '-', '-i', this.server.clientKeyFile, '-P', String(this.server.port)];
    const options = ['StrictHostKeyChecking=no', 'UserKnownHostsFile=/dev/null', 'BatchMode=yes', 'ConnectTimeout=5'];
    return new Promise((resolve) => {
      const child = execFile(
        'sftp',
        [...args, ...options.flatMap((o) => ['-o', o]), `${this.server.user}@127.0.0.1`],
        { timeout: 10_000 },
        (error) => resolve(error === null),
      );
      // The session starts in the SFTP user's home (nobody's is /nonexistent): the directory by its path.
      child.stdin?.end(`ls ${this.server.root}/outbound\n`);
    });
  }

  /** The bank at work while `more()`: reads what arrived, sends what is due. */
  async run(model: Model, rng: Rng, more: () => boolean): Promise<void> {
    while (more()) {
      await this.readOutbound(model, rng);
      await this.send(model, Date.now());
      await sleep(TICK_MS);
    }
  }

  /** Reads each new file of outbound/ (never a temporary `.` name) with achcli; with `rng`, plans its answers. */
  async readOutbound(model: Model, rng: Rng | null): Promise<void> {
    const dir = path.join(this.server.root, 'outbound');
    for (const name of fs.readdirSync(dir).sort()) {
      if (name.startsWith('.') || this.received.has(name)) continue;
      const bytes = fs.readFileSync(path.join(dir, name));
      this.received.set(name, bytes);
      this.counts.files_received += 1;
      let moov;
      try {
        moov = await readWithAchcli(bytes);
      } catch (error) {
        model.anomaly(`the bank received ${name}, which moov-io/ach refuses: ${(error as Error).message.slice(0, 300)}`);
        continue;
      }
      this.odfi ??= String(moov.fileHeader.immediateDestination).trim();
      for (const batch of moov.batches) {
        for (const entry of batch.entryDetails) {
          this.counts.entries_received += 1;
          if (!rng) continue;
          if (batch.batchHeader.standardEntryClassCode === 'PPD') this.plan(rng, entry.traceNumber, entry.amount, entry.transactionCode);
          else if (batch.batchHeader.standardEntryClassCode === 'CCD')
            this.planTransfer(rng, entry.traceNumber, entry.amount, entry.transactionCode);
        }
      }
    }
  }

  private plan(rng: Rng, trace: string, amount: number, transactionCode: number): void {
    const credit = transactionCode === 22 || transactionCode === 32;
    const roll = rng.next();
    const at = Date.now() + rng.int(...ANSWER_AFTER_MS);
    if (roll < RETURN_CHANCE) this.due.push({ at, item: { trace, amount, credit, code: rng.pick(credit ? CREDIT_CODES : DEBIT_CODES) } });
    else if (roll < RETURN_CHANCE + CHANGE_CHANCE)
      this.due.push({ at, item: { trace, amount: 0, credit, code: 'C01', corrected: String(rng.int(100_000_000, 999_999_999)) } });
    else return;
    if (rng.chance(REPEAT_CHANCE)) this.due.push({ at: at + rng.int(2_000, 8_000), item: { ...this.due.at(-1)!.item } });
    if (rng.chance(DUPLICATE_FILE_CHANCE)) this.duplicateNext = true;
  }

  private planTransfer(rng: Rng, trace: string, amount: number, transactionCode: number): void {
    if (!rng.chance(TRANSFER_RETURN_CHANCE)) return;
    const credit = transactionCode === 22 || transactionCode === 32;
    const item: Item = { trace, amount, credit, code: credit ? 'R03' : 'R01', sec: 'CCD' };
    this.due.push({ at: Date.now() + rng.int(...ANSWER_AFTER_MS), item });
  }

  /** One file of the items due by `now` (all of them with `now` = Infinity), and the duplicates due. */
  private async send(model: Model, now: number): Promise<void> {
    for (const copy of this.again.filter((a) => a.at <= now)) {
      this.server.writeFile(`inbound/${copy.name}`, copy.text);
      this.counts.files_sent_twice += 1;
    }
    this.again.splice(0, this.again.length, ...this.again.filter((a) => a.at > now));
    while (this.odfi !== null && (now === Infinity || Date.now() - this.lastFileAt >= FILE_EVERY_MS)) {
      const ready = this.due.filter((d) => d.at <= now).slice(0, ITEMS_PER_FILE);
      if (ready.length === 0) return;
      for (const d of ready) this.due.splice(this.due.indexOf(d), 1);
      const items = ready.map((d) => d.item);
      let text: string;
      try {
        text = await bankFile(this.odfi, items);
      } catch (error) {
        model.anomaly(`the bank could not write a return file with achcli: ${(error as Error).message.slice(0, 300)}`);
        return;
      }
      this.files += 1;
      this.lastFileAt = Date.now();
      const name = `RET-${String(this.files).padStart(4, '0')}.ach`;
      this.server.writeFile(`inbound/${name}`, text);
      this.counts.return_files += 1;
      for (const item of items) {
        const key = `${item.code[0]}/${item.trace}`;
        if (this.sent.has(key)) this.counts.items_sent_again += 1;
        else {
          this.sent.set(key, item);
          if (item.sec === 'CCD') this.counts.transfer_returns_sent += 1;
          if (item.code.startsWith('R')) this.counts.returns_sent += 1;
          else this.counts.changes_sent += 1;
        }
      }
      if (this.duplicateNext) {
        this.duplicateNext = false;
        this.again.push({ at: Date.now() + 3_000, name: `RET-${String(this.files).padStart(4, '0')}-again.ach`, text });
      }
    }
  }

  /**
   * After the load: sends everything still due, then waits until each item sent shows applied (GET /ach/returns,
   * any source: one the workload returned first through the sandbox is a duplicate) or kept as an exception; then
   * takes what the files did into the model, so that the final checks hold them to exactly once.
   */
  async finish(world: World, say: (line: string) => void): Promise<void> {
    const { model } = world;
    await this.readOutbound(model, null);
    // Twice: the first may leave a file's second copy for the next.
    await this.send(model, Infinity);
    await this.send(model, Infinity);
    const started = Date.now();
    let progressAt = started;
    let fewestWaiting = Infinity;
    let records: Json[] = [];
    let exceptions: Json[] = [];
    let waiting: Item[] = [];
    for (;;) {
      records = await world.api.all('/ach/returns');
      exceptions = await world.api.all('/ach/exceptions');
      const seen = new Set([
        ...records.map((r) => `${r.type === 'return' ? 'R' : 'C'}/${r.entry.trace_number}`),
        ...exceptions.filter((x) => x.code && x.trace_number).map((x) => `${x.code[0]}/${x.trace_number}`),
      ]);
      waiting = [...this.sent].filter(([key]) => !seen.has(key)).map(([, item]) => item);
      if (waiting.length < fewestWaiting) [fewestWaiting, progressAt] = [waiting.length, Date.now()];
      if (waiting.length === 0 || Date.now() - progressAt > APPLIED_STALL_MS || Date.now() - started > APPLIED_DEADLINE_MS) break;
      await sleep(2_000);
    }
    const waited = `${Math.round((Date.now() - started) / 1000)} s after the load`;
    for (const item of waiting.slice(0, 5))
      model.anomaly(`the bank's ${item.code} of entry ${item.trace} was neither applied nor kept as an exception ${waited}`);
    if (waiting.length > 5) model.anomaly(`… and ${waiting.length - 5} more of the bank's items`);
    for (const exception of exceptions.filter((x) => WRONG.has(x.kind)))
      model.anomaly(`exception ${exception.id} (${exception.kind}) on a file of the bank's: ${exception.detail}`);
    await this.learn(world, records);
    say(`  the bank (its items applied ${waited}): ${JSON.stringify(this.counts)}`);
  }

  /** Each applied return or change once, with its policy (SPEC §25), and the files' disputes into the model. */
  private async learn(world: World, records: Json[]): Promise<void> {
    const { model } = world;
    const perEntry = new Map<string, number>();
    /** Bank accounts with an R02–R04 return: whether one of those returns disabled it (the first does). */
    const disabling = new Map<string, boolean>();
    for (const record of records) {
      const key = `${record.entry.id}/${record.type}`;
      perEntry.set(key, (perEntry.get(key) ?? 0) + 1);
      if (record.type === 'return' && DISABLING.has(record.code) && record.bank_account_id)
        disabling.set(
          record.bank_account_id,
          (disabling.get(record.bank_account_id) ?? false) || record.applied.includes('bank_account_disabled'),
        );
      if (record.inbound_file.source !== 'sftp') continue;
      const kind = record.type === 'return' ? 'R' : 'C';
      if (!this.sent.has(`${kind}/${record.entry.trace_number}`)) {
        model.anomaly(`return ${record.id} (${record.code}, ${record.inbound_file.file_name}) applied; the bank never sent it`);
        continue;
      }
      if (kind === 'R') this.counts.returns_applied += 1;
      else {
        this.counts.changes_applied += 1;
        if (!record.applied.includes('bank_account_corrected') && !record.applied.includes('exception'))
          model.anomaly(`notification of change ${record.id} applied ${record.applied.join(',') || 'nothing'}`);
      }
      if (kind === 'R' && record.entry.transaction_id) await this.learnReturn(world, record);
    }
    for (const [key, count] of perEntry) if (count > 1) model.anomaly(`entry ${key} applied ${count} times`);
    for (const [account, disabled] of disabling)
      if (!disabled) model.anomaly(`bank account ${account} was returned R02–R04 and never disabled`);
  }

  private async learnReturn(world: World, record: Json): Promise<void> {
    const { model } = world;
    const transactionId = record.entry.transaction_id as string;
    const prior = model.returns.get(transactionId);
    const now = { entryId: record.entry.id as string, disputeId: (record.dispute_id ?? null) as string | null };
    if (prior) {
      // The workload asked the sandbox to return it after the file did: the same return answered.
      if (prior.entryId !== now.entryId || prior.disputeId !== now.disputeId)
        model.anomaly(
          `transaction ${transactionId}: the bank's return is ${JSON.stringify(now)}, the sandbox answered ${JSON.stringify(prior)}`,
        );
      return;
    }
    model.returns.set(transactionId, now);
    if (!now.disputeId) return;
    const answer = await world.api.call('GET', `/dispute/${now.disputeId}`);
    if (answer.status !== 200) {
      model.anomaly(`GET /dispute/${now.disputeId} (the bank's return of ${transactionId}) answered ${answer.status}`);
      return;
    }
    const want = model.transactions.get(transactionId)?.direction === 'cash_out' ? 'won' : 'lost';
    if (answer.json.status !== want)
      model.anomaly(`the bank's return of ${transactionId} made a ${answer.json.status} dispute, not ${want}`);
    model.dispute(answer.json, answer.receivedAt, true);
  }

  async stop(): Promise<void> {
    await this.server.stop();
  }
}
