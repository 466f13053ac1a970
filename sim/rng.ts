/**
 * The simulation's one source of choices: mulberry32 (Tommy Ettinger's 32-bit generator, public domain; the
 * same few lines are in many references), so a seed names the whole schedule. Not for secrets. `fork` gives
 * each client, the fault schedule and the webhook receiver a stream of its own, so one's choices never shift
 * another's.
 */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }

  /** An integer in [min, max], both included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from nothing');
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** One of `weights`' keys, each as likely as its weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = Object.entries(weights) as Array<[K, number]>;
    let left = this.next() * entries.reduce((sum, [, weight]) => sum + weight, 0);
    for (const [key, weight] of entries) {
      left -= weight;
      if (left < 0) return key;
    }
    return entries[entries.length - 1]![0];
  }

  /** An independent stream for `label`, fixed by this stream's seed and the label only. */
  fork(label: number): Rng {
    return new Rng(Math.imul(this.state ^ 0x9e3779b9, label * 2 + 1) ^ (label * 0x85ebca6b));
  }
}
