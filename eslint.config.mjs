// ESLint 9 flat config: typescript-eslint's type-checked rules over every TypeScript file (type information
// from tsconfig.json through the project service), plain recommended rules over the few JavaScript files, and
// the Temporal boundaries: workflow code is deterministic (no Node built-ins) and sees activities only as types.
import { builtinModules } from 'node:module';
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const nodeBuiltins = [...new Set(builtinModules.map((name) => name.replace(/^node:/, '')))];

export default defineConfig(
  {
    // sdk/src/generated/ is written by `npm run sdk:generate`; test/fixtures/sdk/ holds samples that must not compile.
    ignores: [
      'node_modules/',
      'dist/',
      '.tools/',
      '.data/',
      '.scratch/',
      'coverage/',
      'bench/results/',
      'sdk/dist/',
      'console/dist/',
      'test-results/',
      'sdk/src/generated/',
      'test/fixtures/sdk/',
    ],
  },
  { linterOptions: { reportUnusedDisableDirectives: 'error' } },
  js.configs.recommended,
  {
    // console/ (the operator console's page, TSX) is typed by its own console/tsconfig.json, found by the project service.
    files: ['**/*.ts', '**/*.tsx'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // A leading underscore marks a parameter a signature requires but the body does not use (Express's
      // four-argument error handler, an interface's no-op implementation).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_' }],
      // An async function that implements a Promise-returning contract without awaiting anything (a rail
      // adapter, a route handler, an activity) is the contract's shape, not a bug; promises left unhandled are
      // what matters, and no-floating-promises / no-misused-promises stay on for those.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // Tests, benches and the simulation read the API's JSON answers and ad-hoc query rows as loosely typed values and assert on
    // (or print) them field by field: the assertion is the check, so the "unsafe any" family would only demand
    // a cast before every expect().
    files: ['test/**/*.ts', 'bench/**/*.ts', 'sim/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    files: ['**/*.{js,cjs}'],
    languageOptions: { sourceType: 'commonjs', globals: globals.node },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: { sourceType: 'module', globals: globals.node },
  },
  {
    // Workflow code runs in Temporal's deterministic sandbox: no Node built-ins, and activities only through
    // `proxyActivities` with a type-only import (a value import would pull activity code into the bundle).
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'Workflow code runs in the deterministic Temporal sandbox: no Node built-ins.',
          })),
          patterns: [
            { regex: '^node:', message: 'Workflow code runs in the deterministic Temporal sandbox: no Node built-ins.' },
            {
              regex: '(^|/)activities(/|$)',
              allowTypeImports: true,
              message: 'Workflows import activities as types only (import type …, then proxyActivities).',
            },
          ],
        },
      ],
    },
  },
  {
    // Activities never reach into workflow modules: what both sides share belongs in the feature's contract module.
    files: ['activities/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(^|/)workflows(/|$)',
              message: 'Activities must not import workflows/: move shared signals, types and names to the feature contract module.',
            },
          ],
        },
      ],
    },
  },
);
