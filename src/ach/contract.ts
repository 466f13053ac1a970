// The ach feature as other features see it: they import it only through this module (the
// dependency lint's features-meet-through-contracts, docs/development.md "Layers"), so what one feature
// takes from another is this list.
export { achEntryReturnedSchema, achReturnRateExceededSchema, achTransferReturnedSchema, bankAccountUpdatedSchema } from './eventSchemas';
export { knownReturnTitle, returnTitle } from './returnCodes';
