/**
 * `npm run bench -- ach` (SPEC §24 goals), each figure beside its baseline in the same run, medians of
 * BENCH_ACH_RUNS (5):
 * - building a BENCH_ACH_ENTRIES (100,000) entry NACHA file, rows to bytes (src/ach/build.ts), against
 *   moov-io/ach's achcli reading, validating and writing the same file back (`achcli -reformat=ach`);
 *   goal ≤ 2×. Parsing it back (src/ach/parse.ts) is reported beside them.
 * - delivering that file over SFTP to a real OpenSSH server on 127.0.0.1 (src/ach/sftp.ts: connect, check,
 *   upload under a temporary name, rename) against OpenSSH's own `sftp` client putting the same bytes
 *   (connect, put); goal ≤ 1.5×.
 *   BENCH_ACH_ENTRIES=100000 BENCH_ACH_RUNS=5 npx tsx bench/ach.ts
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureAchcli } from '../ops/goTools';
import { buildNachaFile, type NachaBatchInput, type NachaEntryInput, type NachaFileInput } from '../src/ach/build';
import { parseNachaFile } from '../src/ach/parse';
import { routingCheckDigit } from '../src/routingNumbers';
import { deliverFile } from '../src/ach/sftp';
import { startSftpServer, type SftpServer } from '../test/support/sftpServer';
import { writeResults } from './results';

const ENTRIES = Number(process.env.BENCH_ACH_ENTRIES ?? 100_000);
const RUNS = Math.max(3, Number(process.env.BENCH_ACH_RUNS ?? 5));
/** Organizations in the file: one PPD batch each, and one CCD batch for the transfers. */
const ORGANIZATIONS = 20;

const say = (line: string) => process.stdout.write(`${line}\n`);
const round = (value: number, digits = 1) => Number(value.toFixed(digits));
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** A deterministic file: the same bytes every run, so runs compare. */
function benchInput(entryCount: number): NachaFileInput {
  let seed = 42;
  const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648);
  const routing = () => {
    const dfi = String(next() % 100_000_000).padStart(8, '0');
    return dfi + String(routingCheckDigit(dfi));
  };
  const batches: NachaBatchInput[] = Array.from({ length: ORGANIZATIONS }, (_, org) => ({
    serviceClassCode: 200,
    secCode: 'PPD',
    companyName: `ORGANIZATION ${org}`,
    companyIdentification: String(1_000_000_000 + org),
    companyEntryDescription: 'PAYMENT',
    effectiveEntryDate: '2026-11-30',
    entries: [] as NachaEntryInput[],
  }));
  for (let i = 0; i < entryCount; i += 1) {
    const entries = batches[i % ORGANIZATIONS]!.entries as NachaEntryInput[];
    entries.push({
      transactionCode: ([27, 22, 37, 32] as const)[next() % 4]!,
      rdfiRouting: routing(),
      accountNumber: String(next()).padStart(12, '0'),
      amountCents: 1 + (next() % 1_000_000),
      individualIdentification: `usr_${String(i).padStart(10, '0')}`,
      individualName: `USER NUMBER ${i}`,
      traceSequence: i + 1,
    });
  }
  return {
    odfiRouting: '091000019',
    immediateOrigin: ' 123456789',
    immediateDestinationName: 'WELLS FARGO BANK',
    immediateOriginName: 'PAYMENTS LEDGER',
    creationDate: '2026-11-27',
    creationTime: '10:30',
    fileIdModifier: 'A',
    batches,
  };
}

function timed<T>(work: () => T): { ms: number; value: T } {
  const started = process.hrtime.bigint();
  const value = work();
  return { ms: Number(process.hrtime.bigint() - started) / 1e6, value };
}

async function timedAsync<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = process.hrtime.bigint();
  const value = await work();
  return { ms: Number(process.hrtime.bigint() - started) / 1e6, value };
}

async function files(dir: string) {
  const input = benchInput(ENTRIES);
  const builds: number[] = [];
  const parses: number[] = [];
  const achclis: number[] = [];
  let bytes: Buffer = Buffer.alloc(0);
  const achcli = await ensureAchcli();
  const file = path.join(dir, 'bench.ach');
  let sameBytes = false;
  for (let run = 0; run < RUNS; run += 1) {
    const build = timed(() => buildNachaFile(input).bytes);
    builds.push(build.ms);
    bytes = build.value;
    fs.writeFileSync(file, bytes);
    const reformat = timed(() => spawnSync(achcli, ['-reformat=ach', file], { maxBuffer: 1 << 30 }));
    if (reformat.value.status !== 0) throw new Error(`achcli refused the file: ${String(reformat.value.stderr)}`);
    sameBytes = reformat.value.stdout.equals(bytes);
    achclis.push(reformat.ms);
    parses.push(timed(() => parseNachaFile(bytes)).ms);
    say(`  run ${run + 1}: build ${round(build.ms)} ms, achcli -reformat=ach ${round(reformat.ms)} ms, parse ${round(parses.at(-1)!)} ms`);
  }
  return {
    entries: ENTRIES,
    bytes: bytes.length,
    build_ms: round(median(builds)),
    achcli_reformat_ms: round(median(achclis)),
    build_vs_achcli: round(median(builds) / median(achclis), 3),
    goal_build_vs_achcli_max: 2,
    parse_ms: round(median(parses)),
    achcli_writes_the_same_bytes: sameBytes,
    runs: { build_ms: builds.map((ms) => round(ms)), achcli_ms: achclis.map((ms) => round(ms)), parse_ms: parses.map((ms) => round(ms)) },
    bytesOut: bytes,
  };
}

/** OpenSSH's sftp client putting `file` as `name` in one batch session (connect, authenticate, put, quit). */
function sftpCliPut(server: SftpServer, dir: string, file: string, name: string): number {
  const knownHosts = path.join(dir, 'known_hosts');
  fs.writeFileSync(knownHosts, `[127.0.0.1]:${server.port} ${server.hostKeyLine}\n`);
  const batch = path.join(dir, 'sftp.batch');
  fs.writeFileSync(batch, `put ${file} ${server.root}/outbound/${name}\n`);
  const { ms } = timed(() =>
    execFileSync('sftp', [
      '-q',
      '-b',
      batch,
      '-i',
      server.clientKeyFile,
      '-o',
      `UserKnownHostsFile=${knownHosts}`,
      '-o',
      'StrictHostKeyChecking=yes',
      '-P',
      String(server.port),
      `${server.user}@127.0.0.1`,
    ]),
  );
  return ms;
}

async function delivery(dir: string, bytes: Buffer) {
  const server = await startSftpServer();
  const file = path.join(dir, 'bench.ach');
  fs.writeFileSync(file, bytes);
  const ours: number[] = [];
  const cli: number[] = [];
  try {
    for (let run = 0; run < RUNS; run += 1) {
      cli.push(sftpCliPut(server, dir, file, `cli-${run}.ach`));
      const delivered = await timedAsync(() => deliverFile(server.target(), `ours-${run}.ach`, bytes));
      if (delivered.value.outcome !== 'delivered') throw new Error('a fresh name was already delivered');
      if (!fs.readFileSync(path.join(server.root, 'outbound', `ours-${run}.ach`)).equals(bytes))
        throw new Error('the delivered file differs');
      ours.push(delivered.ms);
      say(`  run ${run + 1}: deliverFile ${round(ours.at(-1)!)} ms, sftp put ${round(cli.at(-1)!)} ms`);
    }
  } finally {
    await server.stop();
  }
  return {
    bytes: bytes.length,
    deliver_ms: round(median(ours)),
    sftp_cli_put_ms: round(median(cli)),
    deliver_vs_sftp_cli: round(median(ours) / median(cli), 3),
    goal_deliver_vs_sftp_cli_max: 1.5,
    runs: { deliver_ms: ours.map((ms) => round(ms)), sftp_cli_ms: cli.map((ms) => round(ms)) },
  };
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-ach-'));
  try {
    say(`Building a ${ENTRIES}-entry NACHA file ${RUNS} times beside achcli -reformat=ach of it...`);
    const { bytesOut, ...built } = await files(dir);
    say(`Delivering it over SFTP ${RUNS} times beside OpenSSH's sftp put...`);
    const delivered = await delivery(dir, bytesOut);
    const result = { bench: 'ach', cpus: os.cpus().length, files: built, delivery: delivered };
    const written = writeResults('ach', result);
    say(JSON.stringify(result, null, 2));
    say(`Results: ${written}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: Error) => {
  process.stderr.write(`${error.stack ?? error.message}\n`);
  process.exit(1);
});
