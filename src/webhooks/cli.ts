import type { CommandRegistrar } from '../cli/registrar';
import { findPlainSecrets, sealPlainSecrets } from './secretsAtRest';

/**
 * Operator commands for webhook secrets at rest: seal the ones written in the clear before
 * WEBHOOK_SECRET_KEY was configured, and check that none is left (exit 1 if any, like `account verify`).
 */
export const registerWebhookCommands: CommandRegistrar = (program, ctx) => {
  const webhook = program.command('webhook').description('webhook endpoints');
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
