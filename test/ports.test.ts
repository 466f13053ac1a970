import net from 'node:net';
import { freePort, freePortBlock, portFree } from '../src/platform/ports';

/**
 * The ports the suites and the warm spares' workers pick (src/platform/ports.ts): free, below the ephemeral range,
 * and never handed out twice by one process — a port stays free until its taker binds it, and a topology's api
 * port once fell inside the block of nine its own Temporal server bound next (CI, stop 51).
 */
describe('free ports', () => {
  test('one process never gets the same port twice, whether asked one at a time or in blocks', async () => {
    const handed: number[] = [];
    for (let i = 0; i < 60; i += 1) {
      const base = await freePortBlock(9);
      handed.push(...Array.from({ length: 9 }, (_, offset) => base + offset));
      handed.push(await freePort());
    }
    // 600 ports of 12,000: drawn at random without the rule, overlaps are all but certain (blocks of nine).
    expect(new Set(handed).size).toBe(handed.length);
    for (const port of handed) {
      expect(port).toBeGreaterThanOrEqual(20_000);
      expect(port).toBeLessThan(32_000);
    }
  });

  test('portFree is false while something listens there and true once it stops', async () => {
    const port = await freePort();
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    expect(await portFree(port)).toBe(false);
    await new Promise((resolve) => server.close(resolve));
    expect(await portFree(port)).toBe(true);
  });
});
