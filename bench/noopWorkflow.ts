// The baseline of bench/ledger.ts: a workflow that does nothing, so starting it costs only Temporal itself.
export async function noopWorkflow(): Promise<void> {
  return;
}
