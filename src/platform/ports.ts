import net from 'node:net';
import { StartupError } from './startupError';

/** `host:port` (TEMPORAL_METRICS_ADDRESS and the like) in its two parts. */
export function hostAndPort(address: string): { host: string; port: number } {
  const separator = address.lastIndexOf(':');
  return { host: address.slice(0, separator), port: Number(address.slice(separator + 1)) };
}

/** Resolves when nothing listens on host:port (we could bind it ourselves); false when something does. */
export function portFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.unref();
    probe.once('error', (error: NodeJS.ErrnoException) =>
      error.code === 'EADDRINUSE' || error.code === 'EACCES' ? resolve(false) : reject(error),
    );
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

/**
 * Refuses to start `component` on a port something else holds, naming the port and the setting that moves
 * it: a child that finds its port taken dies with a message in its own log, far from the operator's eyes.
 */
export async function assertPortFree(component: string, port: number, variable: string, host = '127.0.0.1'): Promise<void> {
  if (port === 0 || (await portFree(port, host))) return;
  throw portInUse(component, port, variable, host);
}

export function portInUse(component: string, port: number, variable: string, host = '127.0.0.1'): StartupError {
  return new StartupError(
    `${component}: port ${port} (${variable}) is already in use on ${host}. Stop what listens there, or set ${variable} to a free port.`,
  );
}

/**
 * A TCP port free on `host` right now, below the OS's ephemeral range (32768 and up). A port the OS picks for
 * a listener is an ephemeral one, which an outgoing connection of any process (the suites' many Postgres and
 * gRPC clients) can take as its local end before the process that asked binds it: CI met that as EADDRINUSE.
 */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return freePortBlock(1, host);
}

/**
 * Ports this process has handed out, never handed out again: a port is free until its taker binds it, so two
 * asked for one after the other (an api's port, then a Temporal server's block of nine) could otherwise overlap:
 * a topology test's second start found its api port held by its own Temporal server (CI, stop 51).
 */
const handedOut = new Set<number>();

/**
 * The first of `count` consecutive ports free on `host` right now, between 20000 and 32000: below the OS's
 * ephemeral ports (see freePort), and the Temporal server keeps its membership ports in a smallint column.
 */
export async function freePortBlock(count: number, host = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const base = 20_000 + Math.floor(Math.random() * (32_000 - 20_000 - count));
    const block = Array.from({ length: count }, (_, offset) => base + offset);
    if (block.some((port) => handedOut.has(port))) continue;
    const free = await Promise.all(block.map((port) => portFree(port, host)));
    if (!free.every(Boolean)) continue;
    for (const port of block) handedOut.add(port);
    return base;
  }
  throw new Error(`no ${count} consecutive free ports between 20000 and 32000 on ${host}`);
}
