/**
 * The points of an ACH window where a crashed worker leaves something half done (docs/ach.md, "A worker killed
 * at every step"). The window's code names each point as it passes it; nothing listens in production. The crash
 * test's worker process (test/support/workerProcess.ts) listens for one of them and stops there, so the test
 * can SIGKILL it at exactly that point.
 */
export const ACH_WINDOW_STEPS = [
  /** Inside the build's database transaction: entries claimed, trace numbers taken, file row written, not committed. */
  'build',
  /** The file and its entries committed; the build activity has not answered Temporal. */
  'stored',
  /** Half of the file's bytes written to its temporary name on the bank's server. */
  'upload',
  /** The temporary file whole and checked; not yet renamed to the file's name. */
  'rename',
  /** Renamed: the bank has the file; the database still says `built`. */
  'renamed',
  /** The file and its entries marked `delivered`; the delivery activity has not answered Temporal. */
  'marked',
] as const;
export type AchWindowStep = (typeof ACH_WINDOW_STEPS)[number];

let listener: ((step: AchWindowStep) => Promise<void>) | null = null;

/** The crash test's worker stops at a step by listening (a promise that never settles); null stops listening. */
export function listenToAchWindowSteps(listen: ((step: AchWindowStep) => Promise<void>) | null): void {
  listener = listen;
}

/** Marks that the window's code is at `step`: resolves at once unless a crash test listens. */
export function achWindowStep(step: AchWindowStep): Promise<void> | undefined {
  return listener ? listener(step) : undefined;
}
