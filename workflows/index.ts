// The worker's workflows: every workflow type of the ledger is exported from here.
export * from './webhooks';
