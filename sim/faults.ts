import type { SftpBank } from './bank';
import { sleep } from './http';
import type { Rng } from './rng';
import { signal, type Stack, type Topology } from './stack';

/**
 * Faults chosen by the seed: when (seconds into the load) and what. Each is applied from outside, as an
 * operator's bad day would: SIGKILL of an api or worker process or of the Temporal server (the supervisor must
 * start a replacement), SIGSTOP then SIGCONT of the Temporal server or of every Postgres process; with the SFTP
 * bank (`--bank sftp`) also the bank's server refusing every login, killed with its sessions (an upload cut in
 * the middle) and started again, or its outbound/ unwritable. One fault at a time; the next waits for the
 * previous to recover.
 */
export type FaultKind =
  'kill_api' | 'kill_worker' | 'kill_temporal' | 'stop_temporal' | 'stop_postgres' | 'sftp_refuse_logins' | 'sftp_drop' | 'sftp_unwritable';

export interface PlannedFault {
  atSeconds: number;
  kind: FaultKind;
  /** How long a SIGSTOP holds, in ms. */
  holdMs: number;
}

export interface FaultRecord extends PlannedFault {
  startedAt: number;
  /**
   * SIGKILL → the supervisor's replacement serving (its "… restarted" line); SIGSTOP → SIGCONT → a 2xx read; the
   * bank's fault undone → the bank takes a login again.
   */
  recoveredMs: number | null;
  endedAt: number;
  detail: string;
}

const KINDS: Record<Topology, FaultKind[]> = {
  cluster: ['kill_api', 'kill_worker', 'kill_temporal', 'stop_temporal', 'stop_postgres'],
  single: ['kill_temporal', 'stop_temporal', 'stop_postgres'],
};
/** The SFTP bank's faults, drawn beside the topology's when it runs (a simulated-bank seed's plan is unchanged). */
const BANK_KINDS: FaultKind[] = ['sftp_refuse_logins', 'sftp_drop', 'sftp_unwritable'];
const RECOVERY_DEADLINE_MS = 180_000;

export function planFaults(rng: Rng, seconds: number, topology: Topology, sftpBank = false): PlannedFault[] {
  const kinds = sftpBank ? [...KINDS[topology], ...BANK_KINDS] : KINDS[topology];
  const count = Math.max(1, Math.round(seconds / 25));
  const plan: PlannedFault[] = [];
  for (let i = 0; i < count; i += 1) {
    plan.push({
      atSeconds: rng.int(Math.floor(seconds * 0.05), Math.floor(seconds * 0.8)),
      kind: rng.pick(kinds),
      holdMs: rng.int(1_000, 8_000),
    });
  }
  return plan.sort((a, b) => a.atSeconds - b.atSeconds);
}

/** Resolves with the time of the first line after `since` matching `pattern`, or null at the deadline. */
async function lineAfter(stack: Stack, since: number, pattern: RegExp): Promise<number | null> {
  const deadline = since + RECOVERY_DEADLINE_MS;
  while (Date.now() < deadline) {
    const line = stack.lines.find((entry) => entry.at >= since && pattern.test(entry.text));
    if (line) return line.at;
    await sleep(100);
  }
  return null;
}

async function killOne(stack: Stack, kind: FaultKind): Promise<{ pid: number | null; restarted: RegExp }> {
  if (kind === 'kill_api') {
    const pids = stack.apiPids();
    return { pid: pids[0] ?? null, restarted: /api process \d+ restarted/ };
  }
  if (kind === 'kill_worker') {
    const pids = stack.workerPids();
    return { pid: pids[0] ?? null, restarted: /worker process \d+ restarted/ };
  }
  return { pid: stack.temporalPid(), restarted: /Temporal (dev )?server restarted/ };
}

async function readsAgain(probe: () => Promise<boolean>, since: number): Promise<number | null> {
  while (Date.now() - since < RECOVERY_DEADLINE_MS) {
    if (await probe().catch(() => false)) return Date.now() - since;
    await sleep(100);
  }
  return null;
}

/** The bank's server misbehaves for the fault's hold; recovered when it takes a login again. */
async function applyBankFault(bank: SftpBank, fault: PlannedFault, startedAt: number): Promise<FaultRecord> {
  const { server } = bank;
  const [begin, end, detail]: [() => void, () => void | Promise<void>, string] =
    fault.kind === 'sftp_refuse_logins'
      ? [() => server.refuseLogins(true), () => server.refuseLogins(false), 'logins refused']
      : fault.kind === 'sftp_drop'
        ? [() => server.kill(), () => server.start(), 'sshd and its sessions SIGKILLed']
        : [() => server.setWritable('outbound', false), () => server.setWritable('outbound', true), 'outbound/ unwritable'];
  begin();
  try {
    await sleep(fault.holdMs);
  } finally {
    await end();
  }
  const recoveredMs = await readsAgain(() => bank.answers(), Date.now());
  return { ...fault, startedAt, recoveredMs, endedAt: Date.now(), detail: `${detail} for ${fault.holdMs} ms` };
}

export async function applyFault(
  stack: Stack,
  fault: PlannedFault,
  probe: () => Promise<boolean>,
  bank: SftpBank | null,
): Promise<FaultRecord> {
  const startedAt = Date.now();
  if (fault.kind.startsWith('sftp_')) {
    if (!bank) throw new Error(`fault ${fault.kind} without the SFTP bank`);
    return applyBankFault(bank, fault, startedAt);
  }
  if (fault.kind.startsWith('kill_')) {
    const { pid, restarted } = await killOne(stack, fault.kind);
    if (pid === null) return { ...fault, startedAt, recoveredMs: null, endedAt: Date.now(), detail: 'no such process to kill' };
    signal(pid, 'SIGKILL');
    const at = await lineAfter(stack, startedAt, restarted);
    return { ...fault, startedAt, recoveredMs: at === null ? null : at - startedAt, endedAt: Date.now(), detail: `SIGKILL pid ${pid}` };
  }
  const pids = fault.kind === 'stop_postgres' ? stack.postgresPids() : [stack.temporalPid()].filter((pid): pid is number => pid !== null);
  for (const pid of pids) signal(pid, 'SIGSTOP');
  try {
    await sleep(fault.holdMs);
  } finally {
    for (const pid of pids) signal(pid, 'SIGCONT');
  }
  const resumed = Date.now();
  const recoveredMs = await readsAgain(probe, resumed);
  return { ...fault, startedAt, recoveredMs, endedAt: Date.now(), detail: `SIGSTOP ${pids.length} processes for ${fault.holdMs} ms` };
}

/**
 * Whether a fault is under way, and when the last one ended: a 5xx answer counts against the service only
 * outside a fault's window, from its start to FAULT_GRACE_MS after it recovered.
 */
export interface FaultWindow {
  active: boolean;
  lastEndedAt: number;
}

export const FAULT_GRACE_MS = 15_000;

export function insideFaultWindow(window: FaultWindow, at: number): boolean {
  return window.active || at <= window.lastEndedAt + FAULT_GRACE_MS;
}

/** Runs the plan against the clock of the load that started at `loadStart`, until it ends or `halted()`. */
export async function runFaults(
  stack: Stack,
  plan: PlannedFault[],
  options: {
    loadStart: number;
    probe: () => Promise<boolean>;
    say: (line: string) => void;
    window: FaultWindow;
    halted: () => boolean;
    bank: SftpBank | null;
  },
) {
  const { loadStart, say, window } = options;
  const records: FaultRecord[] = [];
  for (const fault of plan) {
    const wait = loadStart + fault.atSeconds * 1000 - Date.now();
    if (wait > 0) await sleep(wait);
    if (options.halted()) break;
    say(`fault ${fault.kind} at +${((Date.now() - loadStart) / 1000).toFixed(1)} s`);
    window.active = true;
    const record = await applyFault(stack, fault, options.probe, options.bank);
    window.active = false;
    window.lastEndedAt = record.endedAt;
    say(`  ${record.detail}; recovered ${record.recoveredMs === null ? 'NOT' : `in ${(record.recoveredMs / 1000).toFixed(1)} s`}`);
    records.push(record);
  }
  return records;
}
