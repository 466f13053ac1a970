/**
 * The feature folders of src/: each owns its routes, SQL and rules, and shows other features only its contract.ts
 * (docs/development.md, "Layers"). Not features: the shared layer (the top-level files, db/, http/, platform/,
 * metadata/ and rails/, which have no routes of their own, and cli/registrar.ts) and the composition roots
 * (src/api.ts, src/routes.ts, src/worker.ts, src/services.ts and the operator CLI's src/cli/admin.ts).
 */
const FEATURES = '(ach|bankAccounts|console|disputes|events|journal|ledger|limits|orgs|refunds|settlement|tokens|users|webhooks)';

/**
 * Import rules for src/, workflows/, activities/ and ops/, checked by `npm run lint` (dependency-cruiser).
 * Type-only imports count: a circle through `import type` is still a circle a reader has to untangle.
 * @type {import('dependency-cruiser').IConfiguration}
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'No module may reach itself through its imports (type-only imports included).',
      from: {},
      to: { circular: true },
    },
    {
      name: 'workflows-import-activities-as-types-only',
      severity: 'error',
      comment:
        'Workflow code runs in the deterministic Temporal sandbox and sees activities only through proxyActivities: ' +
        "import activities with `import type`, and put shared signals, inputs and names in the feature's workflowContract.ts.",
      from: { path: '^workflows/' },
      to: { path: '^activities/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'activities-do-not-import-workflows',
      severity: 'error',
      comment: "Activities never import workflow modules: what both sides share belongs in the feature's workflowContract.ts.",
      from: { path: '^activities/' },
      to: { path: '^workflows/' },
    },
    {
      name: 'product-does-not-import-ops',
      severity: 'error',
      comment:
        'The product (src/, workflows/, activities/) never reaches into ops/: ops/ starts and supervises the processes ' +
        'and imports the product, not the other way round.',
      from: { path: '^(src|workflows|activities)/' },
      to: { path: '^ops/' },
    },
    {
      name: 'product-starts-no-processes',
      severity: 'error',
      comment: 'Starting child processes is ops/ business (ops/childProcess.ts): the product does not import child_process.',
      from: { path: '^(src|workflows|activities)/' },
      to: { path: '^(node:)?child_process$' },
    },
    {
      name: 'request-code-does-not-reach-temporal',
      severity: 'error',
      comment:
        'Request code (the route table, the edge and every module they import) never calls Temporal, not even through ' +
        'another module: a write queues its workflow starts and signals in its own database transaction ' +
        '(enqueueTemporalCommand in src/platform/temporalCommands.ts, docs/temporal-road.md) and the workers deliver ' +
        'them. Type-only imports count too: a handler that holds a Client can call it.',
      from: { path: '^src/(routes\\.ts$|http/)' },
      to: { path: '^node_modules/@temporalio/client/', reachable: true },
    },
    {
      name: 'shared-imports-no-feature',
      severity: 'error',
      comment:
        'Shared modules (the top-level files of src/, src/db/, src/http/, src/platform/, src/metadata/, src/rails/ and ' +
        'src/cli/registrar.ts) sit below the features and ' +
        'import none of them: move the shared piece down, or have the composition root (src/api.ts, src/routes.ts, ' +
        'src/worker.ts, src/services.ts) pass it in. See docs/development.md, "Layers".',
      from: {
        path: '^src/(?!(routes|api|worker|services)\\.ts$)[^/]+\\.ts$|^src/(db|http|platform|metadata|rails)/|^src/cli/registrar\\.ts$',
      },
      to: { path: `^src/${FEATURES}/` },
    },
    {
      name: 'features-meet-through-contracts',
      severity: 'error',
      comment:
        "A feature imports another feature only through that feature's contract.ts, which re-exports what other features " +
        'use (and, for a feature with workflows, its workflowContract.ts): what one feature takes from another is one list, ' +
        'and an internal module can change without a reader of another feature noticing. Add the name to the contract, ' +
        'or move a piece several features share down into the shared layer. See docs/development.md, "Layers".',
      from: { path: `^src/${FEATURES}/` },
      to: { path: `^src/${FEATURES}/`, pathNot: ['^src/$1/', `^src/${FEATURES}/contract\\.ts$`] },
    },
  ],
  options: {
    // child_process is in the graph only for the rule above it; @temporalio/client for the request-code rule.
    includeOnly: ['^(src|workflows|activities|ops)/', '^(node:)?child_process$', '^node_modules/@temporalio/client/'],
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.json'] },
  },
};
