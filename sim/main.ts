/**
 * `npm run simulate -- [--seed N] [--seconds S] [--topology cluster|single] [--clients C] [--bank simulated|sftp]`:
 * the whole service under a seeded workload and seeded faults, checked against a model (docs/reliability.md).
 * Uses only the public API, the operator CLI, what an operator sees of the processes and, with the SFTP bank,
 * the files the bank sees; shares no code with the service.
 * Exit 0 when nothing diverged; 1 with the seed and the first divergence otherwise; 3 when an injected bug
 * (SIM_INJECT_BUG) was never exercised.
 */
import fs from 'node:fs';
import path from 'node:path';
import { DateTime } from 'luxon';
import { SftpBank, type BankCounts } from './bank';
import { drain, finalChecks, type FinalCounts } from './checks';
import { insideFaultWindow, planFaults, runFaults, type FaultRecord, type FaultWindow } from './faults';
import { Api, Halted, type Recorder } from './http';
import { Model } from './model';
import { startReceiver } from './receiver';
import { Rng } from './rng';
import { REPO_ROOT, startStack, type Stack, type Topology } from './stack';
import { createUser, runClient, type World } from './workload';
import { OperatorDesk } from './operatorDesk';

interface Options {
  seed: number;
  seconds: number;
  topology: Topology;
  clients: number;
  bug: string;
  /** `simulated`: the sandbox's in-process bank; `sftp`: a real OpenSSH server and the bank's files (sim/bank.ts). */
  bank: 'simulated' | 'sftp';
}

function parseArgs(argv: string[]): Options {
  const options: Options = {
    seed: Math.floor(Math.random() * 2 ** 31),
    seconds: 60,
    topology: 'cluster',
    clients: 4,
    bug: process.env.SIM_INJECT_BUG ?? 'off',
    bank: 'simulated',
  };
  for (let i = 0; i < argv.length; i += 2) {
    const [name, value] = [argv[i], argv[i + 1]];
    if (name === '--seed') options.seed = Number(value) >>> 0;
    else if (name === '--seconds') options.seconds = Number(value);
    else if (name === '--clients') options.clients = Number(value);
    else if (name === '--topology' && (value === 'cluster' || value === 'single')) options.topology = value;
    else if (name === '--bank' && (value === 'simulated' || value === 'sftp')) options.bank = value;
    else
      throw new Error(
        `usage: npm run simulate -- [--seed N] [--seconds S] [--topology cluster|single] [--clients C] [--bank simulated|sftp]; got ${name} ${value}`,
      );
  }
  if (!Number.isFinite(options.seconds) || options.seconds < 5) throw new Error('--seconds must be at least 5');
  return options;
}

const say = (line: string) => process.stdout.write(`[sim] ${line}\n`);

/**
 * How long the clients go on: `--seconds`, and with a bug injected, on until the workload has exercised it
 * (a loaded box can take longer than the run to settle its first bank debit, and a control whose bug never
 * ran would pass for the wrong reason), at most three times as long again (and 2 minutes).
 */
function loadFor(options: Options, model: Model, loadStart: number): () => boolean {
  const until = loadStart + options.seconds * 1000;
  const cap = until + Math.max(3 * options.seconds, 120) * 1000;
  return () => Date.now() < until || (options.bug !== 'off' && !model.exercised(options.bug) && Date.now() < cap);
}

/** An operator bank account (SPEC §24) on the first settlement account: its transfers are CCD entries the SFTP bank may return. */
const OPERATOR_BANK = { routing: '021000021', number: '8675309001' };

async function setUp(stack: Stack, model: Model, rng: Rng, receiverRng: Rng, window: FaultWindow, withBank: boolean) {
  const created = await stack.admin(['org', 'create', '--name', 'Simulation']);
  if (created.code !== 0) throw new Error(`admin org create failed: ${created.text}`);
  const orgId = created.json.organization_id as string;
  await stack.admin(['rate-limit', 'set', '--org', orgId, '--write', '1000000', '--read', '1000000']);
  const second = await stack.admin(['account', 'create', '--org', orgId, '--name', 'Simulation second']);
  const accountIds = [
    created.json.account_id as string,
    ...(second.code === 0 ? [(second.json.id ?? second.json.account_id) as string] : []),
  ];
  if (withBank) {
    const set = await stack.admin([
      'account',
      'bank-account',
      'set',
      '--account',
      accountIds[0]!,
      '--routing',
      OPERATOR_BANK.routing,
      '--number',
      OPERATOR_BANK.number,
    ]);
    if (set.code !== 0) throw new Error(`admin account bank-account set failed: ${set.text}`);
  }
  const fiveHundreds: Array<{ at: number; method: string; path: string; status: number }> = [];
  // The first 5xx outside every fault's window is a divergence, and the run stops there (a bug's 500 would
  // otherwise be retried for minutes by every client that meets it).
  let halted: string | null = null;
  const recorder: Recorder = {
    answer: (entry) => {
      if (entry.status < 500) return;
      fiveHundreds.push(entry);
      if (halted === null && !insideFaultWindow(window, entry.at)) {
        halted = `${entry.status} outside any fault window: ${entry.method} ${entry.path} at ${new Date(entry.at).toISOString()}`;
        model.anomaly(halted);
      }
    },
    gaveUp: (entry) => model.anomaly(`${entry.method} ${entry.path}: no definite answer (${entry.reason})`),
    halted: () => halted,
  };
  const api = new Api(stack.url, created.json.api_key as string, recorder);
  const receiver = await startReceiver(receiverRng);
  const endpoint = await api.call('POST', '/webhook', { url: receiver.url });
  if (endpoint.status !== 200 && endpoint.status !== 201) throw new Error(`POST /webhook answered ${endpoint.status}: ${endpoint.text}`);
  receiver.secret = endpoint.json.secret;
  let windows = 0;
  const today = DateTime.now().setZone('America/New_York').startOf('day');
  const world: World = {
    api,
    model,
    receiver,
    webhookId: endpoint.json.id,
    webhookCreatedAt: Date.parse(endpoint.json.created_at as string),
    accountIds,
    admin: stack.admin,
    nextWindowDate: () => today.plus({ days: (windows += 1) }).toISODate()!,
  };
  for (let i = 0; i < 6; i += 1) await createUser(world, rng, i % 3 !== 2);
  return { world, orgId, fiveHundreds, webhookCreatedAt: endpoint.json.created_at as string };
}

interface RunResult {
  seed: number;
  topology: Topology;
  /** npm run cluster's CLUSTER_WARM_SPARES as the run inherited it (the recovery of kill_api and kill_worker). */
  warm_spares: string | null;
  seconds: number;
  clients: number;
  injected_bug: string;
  bank: 'simulated' | 'sftp';
  /** The SFTP bank's files and items, and what the service applied of them. */
  bank_counts: BankCounts | null;
  /** With the SFTP bank: the operator's presentments again of returned transfers (sim/operatorDesk.ts). */
  operator_desk: OperatorDesk['counts'] | null;
  /** With a bug injected: whether the workload did what shows it (Model.exercised). */
  bug_exercised: boolean;
  started_at: string;
  duration_s: number;
  operations: Record<string, number>;
  faults: Array<{ kind: string; at_s: number; recovered_ms: number | null; detail: string }>;
  final: FinalCounts | null;
  five_hundreds: number;
  anomalies: string[];
}

function writeResult(result: RunResult): string {
  // SIM_RESULTS_DIR: elsewhere than the record (the CI test's runs are not kept).
  const dir = process.env.SIM_RESULTS_DIR ?? path.join(REPO_ROOT, 'bench', 'results');
  fs.mkdirSync(dir, { recursive: true });
  const suffix = result.injected_bug === 'off' ? '' : `-bug-${result.injected_bug}`;
  const file = path.join(dir, `sim-${result.started_at.slice(0, 10)}-seed${result.seed}${suffix}.json`);
  fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  return file;
}

async function simulate(options: Options): Promise<number> {
  const bankArgument = options.bank === 'sftp' ? ' --bank sftp' : '';
  say(
    `seed ${options.seed} (replay: npm run simulate -- --seed ${options.seed} --seconds ${options.seconds} --topology ${options.topology}${bankArgument})`,
  );
  const rng = new Rng(options.seed);
  const [faultRng, receiverRng, setupRng, bankRng] = [rng.fork(1), rng.fork(2), rng.fork(3), rng.fork(4)];
  const clientRngs = Array.from({ length: options.clients }, (_, i) => rng.fork(100 + i));
  const plan = planFaults(faultRng, options.seconds, options.topology, options.bank === 'sftp');
  say(`fault schedule: ${plan.map((f) => `+${f.atSeconds}s ${f.kind}`).join(', ')}`);
  const startedAt = new Date();
  const model = new Model();
  const bank = options.bank === 'sftp' ? await SftpBank.start() : null;
  if (bank) say(`the bank: OpenSSH SFTP on 127.0.0.1:${bank.server.port} (${bank.server.root})`);
  const stack = await startStack(
    options.topology,
    { ...(options.bug === 'off' ? {} : { SIM_INJECT_BUG: options.bug }), ...(bank?.server.achEnv() ?? {}) },
    say,
  ).catch(async (error: unknown) => {
    await bank?.stop();
    throw error;
  });
  const desk = new OperatorDesk();
  let faults: FaultRecord[] = [];
  let final: FinalCounts | null = null;
  let fiveHundreds: Array<{ at: number; method: string; path: string; status: number }> = [];
  const window: FaultWindow = { active: false, lastEndedAt: -Infinity };
  try {
    const setup = await setUp(stack, model, setupRng, receiverRng, window, bank !== null);
    fiveHundreds = setup.fiveHundreds;
    const { world } = setup;
    const loadStart = Date.now();
    const more = loadFor(options, model, loadStart);
    const probe = async () => (await fetch(`${stack.url}/readyz`, { signal: AbortSignal.timeout(2_000) })).status === 200;
    say(`load: ${options.clients} clients for ${options.seconds} s`);
    const [records] = await Promise.all([
      runFaults(stack, plan, { loadStart, probe, say, window, halted: () => world.api.isHalted(), bank }),
      ...clientRngs.map((clientRng) => runClient(world, clientRng, more)),
      bank?.run(model, bankRng, () => more() && !world.api.isHalted()),
      bank && desk.run(world, () => more() && !world.api.isHalted()),
    ]);
    faults = records;
    for (const fault of faults) if (fault.recoveredMs === null) model.anomaly(`fault ${fault.kind} (${fault.detail}) did not recover`);
    if (world.api.isHalted()) say('halted at the first divergence: no drain, no final checks');
    else {
      say(`load done: ${Object.values(model.counts).reduce((a, b) => a + b, 0)} operations; draining`);
      // Faults end with the load (docs/reliability.md): from now on the receiver answers every delivery 200, so a
      // delivery it held past the attempt timeout is retried while the drain runs, not after it.
      world.receiver.faulty = false;
      // The bank's last answers go out and are applied before the drain, so their disputes are drained too.
      await bank?.finish(world, say);
      // The returned transfers of the bank's last answers, presented again before the drain.
      if (bank) await desk.look(world);
      await drain(world, say);
      final = await finalChecks(world, setup.webhookCreatedAt, setup.orgId, stack.admin, say, bank);
    }
    await world.receiver.close();
  } catch (error) {
    // A call that ended because the run halted: the divergence is already the first anomaly.
    if (!(error instanceof Halted)) model.anomaly(`the run stopped: ${(error as Error).stack ?? String(error)}`);
  } finally {
    if (model.anomalies.length > 0) process.env.SIM_KEEP_DATA = '1';
    await stack.stop();
    // The bank's directory stays with the service's data when a run failed.
    if (process.env.SIM_KEEP_DATA) bank?.server.kill();
    else await bank?.stop();
  }
  const result: RunResult = {
    seed: options.seed,
    topology: options.topology,
    warm_spares: options.topology === 'cluster' ? (process.env.CLUSTER_WARM_SPARES ?? 'on') : null,
    seconds: options.seconds,
    clients: options.clients,
    injected_bug: options.bug,
    bank: options.bank,
    bank_counts: bank?.counts ?? null,
    operator_desk: bank ? desk.counts : null,
    bug_exercised: model.exercised(options.bug),
    started_at: startedAt.toISOString(),
    duration_s: Math.round((Date.now() - startedAt.getTime()) / 1000),
    operations: model.counts,
    faults: faults.map((f) => ({ kind: f.kind, at_s: f.atSeconds, recovered_ms: f.recoveredMs, detail: f.detail })),
    final,
    five_hundreds: fiveHundreds.length,
    anomalies: model.anomalies,
  };
  say(`result: ${writeResult(result)}`);
  say(
    `faults: ${faults.map((f) => `${f.kind} ${f.recoveredMs === null ? 'not recovered' : `${(f.recoveredMs / 1000).toFixed(1)} s`}`).join(', ') || 'none'}`,
  );
  if (model.anomalies.length > 0) {
    say(`FAILED seed ${options.seed}: ${model.anomalies.length} anomalies; the first divergence:`);
    say(`  ${model.anomalies[0]}`);
    for (const more of model.anomalies.slice(1, 10)) say(`  then: ${more}`);
    say(`service data and log kept in ${stack.dataDir}${bank ? `, the bank's files in ${bank.server.root}` : ''}`);
    return 1;
  }
  if (!result.bug_exercised) {
    say(`INCONCLUSIVE seed ${options.seed}: SIM_INJECT_BUG=${options.bug} was never exercised, so this run shows nothing of it`);
    return 3;
  }
  say(`OK seed ${options.seed}: ${JSON.stringify(final)}`);
  return 0;
}

simulate(parseArgs(process.argv.slice(2))).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
    process.exit(2);
  },
);
