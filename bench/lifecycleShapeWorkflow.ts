import { condition, defineSignal, proxyLocalActivities, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import { TransactionStatusKey } from '../src/platform/searchAttributes';

/**
 * The baseline of bench/ledger.ts's lifecycle figure: a workflow of the cash_in lifecycle's shape with none of
 * the ledger's work (workflows/transaction.ts, LIFECYCLE_V2): started with the same search attributes, a local
 * step (submit), the network's confirmation as a durable timer, a local step (available) and the status
 * upsert, then parked until a settlement signal wakes it for a last upsert and its completion. Its steps do
 * nothing but count. bench/ledger.ts times it to `available`; bench/settlement.ts parks a window's worth and
 * times their wake-up.
 */
export const shapeSettledSignal = defineSignal('shapeSettled');
/** The network's confirmation as a signal (confirmSeconds < 0: the shape waits for it, as a lifecycle confirmed by the API does). */
export const shapeConfirmedSignal = defineSignal('shapeConfirmed');

export interface ShapeSteps {
  shapeStep(step: 'submit' | 'available'): Promise<void>;
}

const local = proxyLocalActivities<ShapeSteps>({ startToCloseTimeout: '30 seconds' });

export async function lifecycleShapeWorkflow(confirmSeconds: number): Promise<void> {
  let settled = false;
  let confirmed = false;
  setHandler(shapeSettledSignal, () => {
    settled = true;
  });
  setHandler(shapeConfirmedSignal, () => {
    confirmed = true;
  });
  await local.shapeStep('submit');
  if (confirmSeconds > 0) await condition(() => settled, `${confirmSeconds} seconds`);
  if (confirmSeconds < 0) await condition(() => confirmed || settled);
  await local.shapeStep('available');
  upsertSearchAttributes([{ key: TransactionStatusKey, value: 'available' }]);
  await condition(() => settled);
  upsertSearchAttributes([{ key: TransactionStatusKey, value: 'settled' }]);
}
