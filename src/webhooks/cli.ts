import type { Command } from 'commander';
import type { CliContext, CommandRegistrar } from '../cli/registrar';
import { withTransaction, type Pool } from '../db/pool';
import { ApiError } from '../errors';
import { createLogger } from '../logger';
import { LifecyclePoke } from '../platform/lifecyclePoke';
import { startReplay } from './redelivery';
import { getReplay, replayView } from './replayRepo';
import { replayWebhookBody, type WebhookReplayView } from './replaySchemas';
import { findPlainSecrets, sealPlainSecrets } from './secretsAtRest';

/** CLI limits: how often a replay's progress is read, and the bar's width in characters. */
const CLI_LIMITS = { pollMs: 500, barWidth: 30 };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `[#########.........]  300/1000 sent (30%), 2 failed`: one line, redrawn in place on a terminal. */
export function progressLine(replay: Pick<WebhookReplayView, 'events_total' | 'events_sent' | 'events_failed' | 'status'>): string {
  const total = Math.max(replay.events_total, replay.events_sent);
  const fraction = total === 0 ? 1 : replay.events_sent / total;
  const filled = Math.round(fraction * CLI_LIMITS.barWidth);
  const bar = `${'#'.repeat(filled)}${'.'.repeat(CLI_LIMITS.barWidth - filled)}`;
  return `[${bar}] ${replay.events_sent}/${total} sent (${Math.floor(fraction * 100)}%), ${replay.events_failed} failed, ${replay.status}`;
}

/** An API error as one line: its message and each field's complaint. */
function cliError(error: unknown): unknown {
  if (!(error instanceof ApiError) || !error.extra.details) return error;
  const details = error.extra.details.map((detail) => `${detail.param}: ${detail.message}`).join('; ');
  return new ApiError({ status: error.status, type: error.type, code: error.code, message: `${error.message} (${details})` });
}

/**
 * `webhook replay --org O --endpoint W --from T [--to T] [--failed-only]` (SPEC §17): starts a replay exactly
 * as POST /webhook/{id}/replay does and follows it to the end, its progress bar on stderr (redrawn in place
 * on a terminal, a line per change otherwise), so stdout keeps the answer (one JSON object with --json).
 */
const registerReplayCommand = (webhook: Command, ctx: () => CliContext) => {
  webhook
    .command('replay')
    .description("send an organization's events of a time range to one of its endpoints again, oldest first")
    .requiredOption('--org <id>', 'the organization')
    .requiredOption('--endpoint <id>', 'the webhook endpoint (whk_…)')
    .requiredOption('--from <time>', 'events created at or after this ISO 8601 instant (within the retention period)')
    .option('--to <time>', 'events created before this ISO 8601 instant (default: now)')
    .option('--failed-only', 'only events no delivery of which to this endpoint succeeded', false)
    .action(async (options: { org: string; endpoint: string; from: string; to?: string; failedOnly: boolean }) => {
      const { config, pool, out } = ctx();
      const parsed = replayWebhookBody.safeParse({
        created_at_gte: options.from,
        created_at_lt: options.to,
        failed_only: options.failedOnly,
      });
      if (!parsed.success) throw new Error(parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; '));
      const log = createLogger('warn', 'admin');
      // The replay's start is queued with its row, like the API's: a worker's drainer starts it, woken by this poke.
      const lifecyclePoke = new LifecyclePoke(pool, log);
      const deps = { config, pool, log, services: { taskQueue: config.TEMPORAL_TASK_QUEUE } };
      const started = await withTransaction(pool, async (tx) => {
        const outcome = await startReplay(
          { db: tx, organizationId: options.org, now: new Date(), deps, lifecyclePoke },
          options.endpoint,
          parsed.data,
        );
        return outcome.body;
      }).catch((error: unknown) => {
        throw cliError(error);
      });
      lifecyclePoke.poke();
      await lifecyclePoke.close();
      const replay = await followReplay(pool, options.org, started);
      out(
        `replay ${replay.id} ${replay.status}: ${replay.events_sent}/${replay.events_total} events sent, ${replay.events_failed} failed`,
        replay,
      );
    });
};

/** Polls the replay's row until it is no longer running, redrawing its progress bar on stderr. */
async function followReplay(pool: Pool, organizationId: string, started: WebhookReplayView): Promise<WebhookReplayView> {
  const tty = process.stderr.isTTY;
  process.stderr.write(`replay ${started.id} of ${started.events_total} events to ${started.endpoint_id}\n`);
  let replay = started;
  let last = '';
  for (;;) {
    const line = progressLine(replay);
    if (line !== last) process.stderr.write(tty ? `\r${line}` : `${line}\n`);
    last = line;
    if (replay.status !== 'running') break;
    await sleep(CLI_LIMITS.pollMs);
    const row = await getReplay(pool, { organizationId, endpointId: started.endpoint_id, id: started.id });
    if (row) replay = replayView(row);
  }
  if (tty) process.stderr.write('\n');
  return replay;
}

/**
 * Operator commands for webhook secrets at rest: seal the ones written in the clear before
 * WEBHOOK_SECRET_KEY was configured, and check that none is left (exit 1 if any, like `account verify`).
 */
const registerSecretCommands = (webhook: Command, ctx: () => CliContext) => {
  webhook
    .command('seal-secrets')
    .description('seal with WEBHOOK_SECRET_KEY every signing secret, and stored answer showing one, kept in the clear')
    .action(async () => {
      const { config, pool, out } = ctx();
      const key = config.WEBHOOK_SECRET_KEY;
      if (!key) throw new Error('WEBHOOK_SECRET_KEY is not set: there is nothing to seal with');
      const sealed = await sealPlainSecrets(pool, key, (line) => process.stderr.write(`${line}\n`));
      out(`sealed ${sealed.endpoints} endpoint secrets and ${sealed.answers} stored answers`, {
        sealed_endpoint_secrets: sealed.endpoints,
        sealed_stored_answers: sealed.answers,
      });
    });
  webhook
    .command('verify-secrets')
    .description('list webhook secrets still kept in the clear (exit 1 if any)')
    .action(async () => {
      const { pool, out } = ctx();
      const plain = await findPlainSecrets(pool);
      const ok = plain.endpointIds.length === 0 && plain.answers === 0;
      out(
        ok
          ? 'ok: every webhook secret at rest is sealed'
          : [
              ...plain.endpointIds.map((id) => `${id}  secret in the clear`),
              ...(plain.answers > 0 ? [`${plain.answers} stored POST /webhook answers in the clear`] : []),
              'run `admin webhook seal-secrets` with WEBHOOK_SECRET_KEY set',
            ].join('\n'),
        { ok, plain_endpoint_ids: plain.endpointIds, plain_stored_answers: plain.answers },
      );
      if (!ok) process.exitCode = 1;
    });
};

export const registerWebhookCommands: CommandRegistrar = (program, ctx) => {
  const webhook = program.command('webhook').description('webhook endpoints');
  registerReplayCommand(webhook, ctx);
  registerSecretCommands(webhook, ctx);
};
