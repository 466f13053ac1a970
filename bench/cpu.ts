import fs from 'node:fs';
import type pg from 'pg';

/**
 * CPU time of the processes on a bench's box, from /proc (Linux; null elsewhere): where the shared cores went.
 * Clock ticks are 10 ms: read over phases of seconds, not single calls.
 */

const TICKS_PER_SECOND = 100;

/** The fields of /proc/<pid>/stat after the command name: [1] ppid, [11] utime, [12] stime, [13] cutime, [14] cstime. */
function statFields(pid: number): number[] {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
}

/** CPU seconds of a process and, with `children`, of its children it has reaped (null once it is gone). */
export function cpuSeconds(pid: number, children = false): number | null {
  try {
    const fields = statFields(pid);
    const own = fields[11]! + fields[12]!;
    return (children ? own + fields[13]! + fields[14]! : own) / TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

/** CPU seconds of a local Postgres server: the postmaster (with the backends it reaped) and its live children. */
export function postgresCpuSeconds(postmaster: number | null): number | null {
  if (postmaster === null) return null;
  let total = cpuSeconds(postmaster, true);
  if (total === null) return null;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (statFields(Number(entry))[1] === postmaster) total += cpuSeconds(Number(entry)) ?? 0;
    } catch {
      // Gone between the listing and the read: its time is now in the postmaster's reaped children.
    }
  }
  return total;
}

/** The postmaster of the Postgres `pool` reaches, when it runs on this machine (null: a remote one). */
export async function localPostmaster(pool: pg.Pool | pg.Client): Promise<number | null> {
  try {
    const { rows } = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const postmaster = statFields(rows[0]!.pid)[1]!;
    return fs.readFileSync(`/proc/${postmaster}/comm`, 'utf8').startsWith('postgres') ? postmaster : null;
  } catch {
    return null;
  }
}

/** Bytes a process has written to storage so far (0 once it is gone). */
export function writeBytes(pid: number): number {
  try {
    return Number(/write_bytes:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** Starts reading each named CPU counter (seconds); the function it answers gives what each used since. */
export function cpuMeter(counters: Record<string, () => number | null>): () => Record<string, number> {
  const read = () => Object.fromEntries(Object.entries(counters).map(([name, counter]) => [name, counter() ?? 0]));
  const before = read();
  return () => {
    const after = read();
    return Object.fromEntries(Object.keys(counters).map((name) => [name, after[name]! - before[name]!]));
  };
}
