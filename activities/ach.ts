import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { achFileBytes, buildWindowFile, getAchFile, markFileDelivered, settleFile } from '../src/ach/files';
import { deliverFile, SftpError, sftpTargetOf } from '../src/ach/sftp';
import { achWindowStep } from '../src/ach/steps';
import { deliveredFileSettlesAt, isAchBusinessDay } from '../src/ach/timing';
import type { ActivityDeps } from './deps';
import { heartbeating } from './heartbeat';

/**
 * The ACH window's steps (SPEC §24, workflows/achWindow.ts). Each is idempotent, keyed by the window run or
 * the file: a retried build finds the file its run built, a repeated delivery finds the file already there
 * (src/ach/sftp.ts) or already marked, a repeated settlement changes nothing.
 */
export function createAchActivities(deps: ActivityDeps) {
  return {
    /**
     * Builds the window's file (null: nothing queued, or not a business day for a production firing). The run
     * is this activity's workflow; `scheduledAt` is the schedule's nominal time, when a schedule started it.
     */
    async buildAchFile(input: {
      scheduledAt: string | null;
    }): Promise<{ fileId: string; fileName: string; entryCount: number; settleAt: string } | null> {
      const { workflowExecution, activityId } = Context.current().info;
      if (
        input.scheduledAt &&
        deps.config.LEDGER_ENVIRONMENT === 'production' &&
        !isAchBusinessDay(new Date(input.scheduledAt), deps.config)
      ) {
        return null;
      }
      const builtBy = workflowExecution?.workflowId ?? activityId;
      const built = await heartbeating(() => buildWindowFile(deps.pool, deps.config, deps.log, builtBy, new Date()));
      if (!built) return null;
      await achWindowStep('stored');
      deps.log.info({ file_id: built.fileId, file_name: built.fileName, entries: built.entryCount }, 'ACH file built');
      return { ...built, settleAt: built.settleAt.toISOString() };
    },

    /**
     * Sends the file to the bank: production over SFTP (temporary name, then renamed), sandbox to its
     * simulated bank in-process. Production without ACH_SFTP_URL fails retryably: the file stays `built` and
     * goes once a worker has it. (`undeliverable` is what runs before that answered; none answers it now.)
     */
    async deliverAchFile(input: { fileId: string }): Promise<{ outcome: 'delivered' | 'already_delivered' | 'undeliverable' }> {
      return heartbeating(() => deliver(input.fileId));
    },

    /**
     * The file's entries settle and their lifecycles get their signals, in one database transaction. A
     * production file delivered after the settlement time it was built for settles at the one its delivery
     * makes (deliveredFileSettlesAt): until then this step fails on purpose and Temporal retries it then.
     */
    async settleAchFile(input: { fileId: string }): Promise<{ settled: boolean; signalled: number }> {
      const file = await getAchFile(deps.pool, input.fileId);
      if (deps.config.LEDGER_ENVIRONMENT === 'production' && file?.status === 'delivered' && file.delivered_at) {
        const settlesAt = deliveredFileSettlesAt({ settle_at: file.settle_at, delivered_at: file.delivered_at }, deps.config);
        const early = settlesAt.getTime() - Date.now();
        if (early > 0) {
          throw ApplicationFailure.create({
            message: `ACH file ${file.id} reached the bank at ${file.delivered_at.toISOString()}; it settles at ${settlesAt.toISOString()}`,
            type: 'AchFileDeliveredLate',
            nextRetryDelay: early,
          });
        }
      }
      const result = await heartbeating(() => settleFile(deps.pool, deps.config.TEMPORAL_TASK_QUEUE, input.fileId, new Date()));
      if (result.settled) deps.log.info({ file_id: input.fileId, signalled: result.signalled }, 'ACH file settled');
      return result;
    },
  };

  async function deliver(fileId: string): Promise<{ outcome: 'delivered' | 'already_delivered' | 'undeliverable' }> {
    const file = await getAchFile(deps.pool, fileId);
    if (!file) throw ApplicationFailure.nonRetryable(`no ACH file ${fileId}`, 'AchFileMissing');
    if (file.status !== 'built') return { outcome: 'already_delivered' };
    // SPEC §24: production delivers over SFTP; sandbox to its simulated bank in-process, or to the server
    // ACH_SFTP_URL names when it is set (a bank's test server, or the simulation's OpenSSH bank, docs/ach.md).
    const target = sftpTargetOf(deps.config);
    if (deps.config.LEDGER_ENVIRONMENT === 'production' || target) {
      if (!target) {
        // Retried durably like a server that is down: a worker that has ACH_SFTP_URL delivers it.
        deps.log.warn({ file_id: file.id, file_name: file.file_name }, 'ACH file built and not delivered: ACH_SFTP_URL is not set');
        throw ApplicationFailure.retryable(
          `ACH file ${file.file_name} is kept undelivered: ACH_SFTP_URL is not set; retried until a worker has it`,
          'AchDeliveryNotConfigured',
        );
      }
      const bytes = (await achFileBytes(deps.pool, deps.config, file.id))!;
      try {
        await deliverFile(target, file.file_name, bytes);
      } catch (error) {
        if (error instanceof SftpError && !error.retryable) throw ApplicationFailure.nonRetryable(error.message, `SftpError.${error.code}`);
        throw error;
      }
      await achWindowStep('renamed');
    }
    await markFileDelivered(deps.pool, file.id, new Date());
    await achWindowStep('marked');
    deps.log.info({ file_id: file.id, file_name: file.file_name }, 'ACH file delivered');
    return { outcome: 'delivered' };
  }
}

export type AchActivities = ReturnType<typeof createAchActivities>;
