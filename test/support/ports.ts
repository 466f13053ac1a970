// The suites pick their ports as the warm spare's runtime does (src/platform/ports.ts).
export { freePort, freePortBlock } from '../../src/platform/ports';
