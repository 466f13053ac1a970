import { portFree } from '../../src/platform/ports';

/**
 * A TCP port free on 127.0.0.1 right now, below the OS's ephemeral range (32768 and up). A port the OS picks for
 * a listener is an ephemeral one, which an outgoing connection of any process (the suites' many Postgres and
 * gRPC clients) can take as its local end before the process under test binds it: CI met that as EADDRINUSE.
 */
export function freePort(): Promise<number> {
  return freePortBlock(1);
}

/**
 * The first of `count` consecutive ports free on 127.0.0.1 right now, between 20000 and 32000: below the OS's
 * ephemeral ports (see freePort), and the Temporal server keeps its membership ports in a smallint column.
 */
export async function freePortBlock(count: number): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const base = 20_000 + Math.floor(Math.random() * (32_000 - 20_000 - count));
    const free = await Promise.all(Array.from({ length: count }, (_, offset) => portFree(base + offset)));
    if (free.every(Boolean)) return base;
  }
  throw new Error(`no ${count} consecutive free ports between 20000 and 32000`);
}
