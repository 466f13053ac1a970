// Builds the operator console (docs/console.md) into console/dist, served by the api under /console.
// Preact's JSX through Vite's own transform (no plugin); the SDK from its TypeScript source.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = path.dirname(fileURLToPath(import.meta.url));

export default defineConfig({
  root: here,
  base: '/console/',
  logLevel: 'warn',
  resolve: { alias: { '@payments-ledger/sdk': path.join(here, '..', 'sdk', 'src', 'index.ts') } },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // Nothing inline: the page's CSP allows scripts and styles from its own origin only.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
});
