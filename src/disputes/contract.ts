// The disputes feature as other features see it: they import it only through this module (the
// dependency lint's features-meet-through-contracts, docs/development.md "Layers"), so what one feature
// takes from another is this list.
export { getDispute, insertDisputes, renderDispute, type NewDispute } from './repo';
export { disputeSchema } from './schemas';
