import type { Command } from 'commander';
import type { Config } from '../config';
import type { Pool } from '../db/pool';

/**
 * What every feature's operator commands get (SPEC §13): the configuration, a pool, and one way to answer —
 * a short human line, or with --json exactly one JSON object on stdout.
 */
export interface CliContext {
  config: Config;
  pool: Pool;
  out: (human: string, json: unknown) => void;
}

/** A feature adds its commands to the program; the context is built only when a command runs. */
export type CommandRegistrar = (program: Command, context: () => CliContext) => void;
