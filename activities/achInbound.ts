import { ApplicationFailure } from '@temporalio/common';
import { ingestInboundFile, type IngestResult } from '../src/ach/inbound';
import { sweepSandboxBank } from '../src/ach/sandboxBank';
import { downloadInbound, listInbound, SftpError, sftpTargetOf } from '../src/ach/sftp';
import type { ActivityDeps } from './deps';
import { heartbeating } from './heartbeat';

/** At most this many files per poll; the rest are the next poll's (a run's history stays small). */
export const INBOUND_POLL_LIMITS = { filesPerRunMax: 500 } as const;

function rethrow(error: unknown): never {
  if (error instanceof SftpError && !error.retryable) throw ApplicationFailure.nonRetryable(error.message, `SftpError.${error.code}`);
  throw error;
}

/**
 * The inbound poll's steps (SPEC §25, workflows/achInbound.ts), each idempotent by the file's content: a name
 * already seen with its size is not listed again, and a file ingested again (any name) changes nothing.
 */
export function createAchInboundActivities(deps: ActivityDeps) {
  const services = { taskQueue: deps.config.TEMPORAL_TASK_QUEUE };
  return {
    /** The names in inbound/ not yet seen with their size, oldest first; [] when production has no SFTP. */
    async listAchInbound(): Promise<string[]> {
      const target = sftpTargetOf(deps.config);
      if (!target) return [];
      const files = await heartbeating(() => listInbound(target)).catch(rethrow);
      if (files.length === 0) return [];
      const { rows } = await deps.pool.query<{ file_name: string; size_bytes: string }>(
        'SELECT file_name, size_bytes::text FROM ach_inbound_names WHERE file_name = ANY($1)',
        [files.map((f) => f.name)],
      );
      const seen = new Map(rows.map((r) => [r.file_name, Number(r.size_bytes)]));
      return files
        .filter((f) => seen.get(f.name) !== f.bytes)
        .slice(0, INBOUND_POLL_LIMITS.filesPerRunMax)
        .map((f) => f.name);
    },

    /** Sandbox: the simulated bank's returns and notifications of change of entries settled SANDBOX_RETURN_SECONDS ago. */
    async sandboxBankSweep(): Promise<{ returned: number; changed: number }> {
      if (deps.config.LEDGER_ENVIRONMENT !== 'sandbox') return { returned: 0, changed: 0 };
      return heartbeating(() => sweepSandboxBank({ ...deps, services }, new Date()));
    },

    /** Downloads one file and ingests it in one database transaction. */
    async ingestAchInbound(input: {
      name: string;
    }): Promise<Pick<IngestResult, 'outcome'> & { fileId: string; status: string; exceptions: number }> {
      const target = sftpTargetOf(deps.config);
      if (!target) throw ApplicationFailure.nonRetryable('ACH_SFTP_URL is not set', 'AchSftpNotConfigured');
      const result = await heartbeating(async () => {
        const bytes = await downloadInbound(target, input.name).catch(rethrow);
        return ingestInboundFile({ ...deps, services }, { fileName: input.name, bytes, source: 'sftp', now: new Date() });
      });
      deps.log.info(
        { file: input.name, outcome: result.outcome, inbound_file_id: result.file.id, status: result.file.status },
        'ACH inbound file',
      );
      return { outcome: result.outcome, fileId: result.file.id, status: result.file.status, exceptions: result.file.exceptions_count };
    },
  };
}

export type AchInboundActivities = ReturnType<typeof createAchInboundActivities>;
