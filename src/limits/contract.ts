// The limits feature as other features see it: they import it only through this module (the
// dependency lint's features-meet-through-contracts, docs/development.md "Layers"), so what one feature
// takes from another is this list. What workflows and activities share is in ./workflowContract.
export * from './workflowContract';
export { declineLimitSchema, limitsSchema, type DeclineLimit } from './schemas';
export { adjustLimitUse, adjustLimitUses, takeLimits } from './service';
