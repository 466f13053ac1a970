import net from 'node:net';
import { portFree } from '../../src/platform/ports';

/** A TCP port free on 127.0.0.1 right now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * The first of `count` consecutive ports free on 127.0.0.1 right now, below 32768: the Temporal server keeps
 * its membership ports in a smallint column, so the OS's ephemeral ports (above 32767) do not fit.
 */
export async function freePortBlock(count: number): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const base = 20_000 + Math.floor(Math.random() * (32_000 - 20_000 - count));
    const free = await Promise.all(Array.from({ length: count }, (_, offset) => portFree(base + offset)));
    if (free.every(Boolean)) return base;
  }
  throw new Error(`no ${count} consecutive free ports between 20000 and 32000`);
}
