import { Halted, sleep } from './http';
import type { World } from './workload';

/**
 * The service operator's desk, with the SFTP bank (SPEC §25): a transfer whose CCD entry the bank returned waits
 * for an operator, and the simulation's acts with the CLI once it sees the exception (GET
 * /ach/exceptions?kind=transfer_returned), once per returned entry. An R01 (the operator's account short of funds)
 * is presented again (`admin ach transfer represent`) until the limit; an R03 (no such account), or an entry at the
 * limit, is paid by wire and recorded (`admin ach transfer settled-outside --reference`), which settles a pending
 * transfer. The CLI's answers are definite (it waits out a paused Postgres): exit 0 done, a presentment counted in
 * the model for the files check (sim/achFiles.ts: a transfer is then in one file more); exit 1 from `represent`
 * only at the limit (two presentments again); anything else is an anomaly.
 */
const LOOK_EVERY_MS = 3_000;

export class OperatorDesk {
  /** Exceptions acted on. */
  private readonly seen = new Set<string>();
  readonly counts = { presented: 0, refused_at_limit: 0, settled_outside: 0 };

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
      /** One CLI action: done (exit 0), refused at the limit (where `limited`: exit 1 saying so), else an anomaly. */
      const act = async (args: string[], limited: boolean): Promise<'done' | 'limit' | 'failed'> => {
        const answer = await world.admin(args);
        if (answer.code === 0) return 'done';
        if (limited && answer.code === 1 && answer.text.includes('the most there may be')) return 'limit';
        model.anomaly(
          `admin ${args.join(' ')} (exception ${exception.id as string}) answered exit ${answer.code}: ${answer.text.slice(0, 300)}`,
        );
        return 'failed';
      };
      if (exception.code !== 'R03') {
        const presented = await act(['ach', 'transfer', 'represent', transferId], true);
        if (presented === 'done') {
          model.presented.set(transferId, (model.presented.get(transferId) ?? 0) + 1);
          this.counts.presented += 1;
        }
        if (presented !== 'limit') continue;
        this.counts.refused_at_limit += 1;
      }
      const reference = `SIM WIRE ${(exception.id as string).slice(-12)}`;
      if ((await act(['ach', 'transfer', 'settled-outside', transferId, '--reference', reference], false)) === 'done')
        this.counts.settled_outside += 1;
    }
  }
}
