/**
 * The simulation's negative controls (issue 38, `npm run simulate`, docs/reliability.md): a deliberate bug, on
 * only when SIM_INJECT_BUG names it, so the simulation can show that its checks catch it. Off by default;
 * src/config.ts refuses any value but `off` in production. Read here, not threaded through the dependencies,
 * so each injection stays one line at the place it breaks.
 */
export const INJECTED_BUGS = ['double_return', 'skip_lifecycle_start', 'double_refund_net'] as const;
export type InjectedBug = (typeof INJECTED_BUGS)[number];

export function injectedBug(bug: InjectedBug): boolean {
  return process.env.SIM_INJECT_BUG === bug;
}
