import { Halted, sleep } from './http';
import type { World } from './workload';

/**
 * The service operator's desk, with the SFTP bank (SPEC §25): a transfer whose CCD entry the bank returned waits
 * for an operator, and the simulation's presents it again with the CLI (`admin ach transfer represent`) once it
 * sees the exception (GET /ach/exceptions?kind=transfer_returned): one try per returned entry. The CLI's answer
 * is definite (it waits out a paused Postgres): exit 0 presented, counted in the model for the files check
 * (sim/achFiles.ts: a transfer is then in one file more); exit 1 refused, which only the limit may be (two
 * presentments again); anything else is an anomaly.
 */
const LOOK_EVERY_MS = 3_000;

export class OperatorDesk {
  /** Exceptions acted on. */
  private readonly seen = new Set<string>();
  readonly counts = { presented: 0, refused_at_limit: 0 };

  async run(world: World, more: () => boolean): Promise<void> {
    while (more()) {
      try {
        await this.look(world);
      } catch (error) {
        // As a client's operation (sim/workload.ts runClient): a halted run already has its divergence.
        if (!(error instanceof Halted)) world.model.anomaly(`the operator's desk: ${(error as Error).message}`);
      }
      await sleep(LOOK_EVERY_MS);
    }
  }

  async look(world: World): Promise<void> {
    const { model } = world;
    for (const exception of await world.api.all('/ach/exceptions?kind=transfer_returned')) {
      if (this.seen.has(exception.id as string)) continue;
      this.seen.add(exception.id as string);
      const transferId = exception.transfer_id as string;
      const answer = await world.admin(['ach', 'transfer', 'represent', transferId]);
      if (answer.code === 0) {
        model.presented.set(transferId, (model.presented.get(transferId) ?? 0) + 1);
        this.counts.presented += 1;
      } else if (answer.code === 1 && answer.text.includes('the most there may be')) this.counts.refused_at_limit += 1;
      else
        model.anomaly(
          `admin ach transfer represent ${transferId} (exception ${exception.id as string}) answered exit ${answer.code}: ${answer.text.slice(0, 300)}`,
        );
    }
  }
}
