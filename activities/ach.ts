import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { achFileBytes, buildWindowFile, getAchFile, markFileDelivered, settleFile } from '../src/ach/files';
import { deliverFile, SftpError, sftpTargetOf } from '../src/ach/sftp';
import { isAchBusinessDay } from '../src/ach/timing';
import type { ActivityDeps } from './deps';

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
      const built = await buildWindowFile(deps.pool, deps.config, deps.log, workflowExecution?.workflowId ?? activityId, new Date());
      if (!built) return null;
      deps.log.info({ file_id: built.fileId, file_name: built.fileName, entries: built.entryCount }, 'ACH file built');
      return { ...built, settleAt: built.settleAt.toISOString() };
    },

    /**
     * Sends the file to the bank: production over SFTP (temporary name, then renamed), sandbox to its
     * simulated bank in-process. `undeliverable`: production without ACH_SFTP_URL; the file stays `built`.
     */
    async deliverAchFile(input: { fileId: string }): Promise<{ outcome: 'delivered' | 'already_delivered' | 'undeliverable' }> {
      const file = await getAchFile(deps.pool, input.fileId);
      if (!file) throw ApplicationFailure.nonRetryable(`no ACH file ${input.fileId}`, 'AchFileMissing');
      if (file.status !== 'built') return { outcome: 'already_delivered' };
      if (deps.config.LEDGER_ENVIRONMENT === 'production') {
        const target = sftpTargetOf(deps.config);
        if (!target) {
          deps.log.warn({ file_id: file.id, file_name: file.file_name }, 'ACH file built and not delivered: ACH_SFTP_URL is not set');
          return { outcome: 'undeliverable' };
        }
        const bytes = (await achFileBytes(deps.pool, deps.config, file.id))!;
        try {
          await deliverFile(target, file.file_name, bytes);
        } catch (error) {
          if (error instanceof SftpError && !error.retryable)
            throw ApplicationFailure.nonRetryable(error.message, `SftpError.${error.code}`);
          throw error;
        }
      }
      await markFileDelivered(deps.pool, file.id, new Date());
      deps.log.info({ file_id: file.id, file_name: file.file_name }, 'ACH file delivered');
      return { outcome: 'delivered' };
    },

    /** The file's entries settle and their lifecycles get their signals, in one database transaction. */
    async settleAchFile(input: { fileId: string }): Promise<{ settled: boolean; signalled: number }> {
      const result = await settleFile(deps.pool, deps.config.TEMPORAL_TASK_QUEUE, input.fileId, new Date());
      if (result.settled) deps.log.info({ file_id: input.fileId, signalled: result.signalled }, 'ACH file settled');
      return result;
    },
  };
}

export type AchActivities = ReturnType<typeof createAchActivities>;
