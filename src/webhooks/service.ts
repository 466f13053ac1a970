import { errors } from '../errors';
import type { Op, Outcome } from '../services';
import { createEndpoint, EndpointLimitError, endpointView } from './repo';
import { ALL_EVENTS, WEBHOOK_LIMITS, type CreatedWebhookEndpoint, type CreateWebhookBody } from './schemas';
import { generateSecret, sealSecret } from './signing';
import { checkTargetAtRegistration } from './ssrf';

/** Registers an endpoint (SPEC §12): the target is checked, the secret sealed, and shown this once. */
export async function registerEndpoint(op: Op, body: CreateWebhookBody): Promise<Outcome<CreatedWebhookEndpoint>> {
  const { config } = op.deps;
  const refusal = await checkTargetAtRegistration(config, body.url);
  if (refusal) throw errors.validation([{ param: 'url', message: refusal }]);
  const secret = generateSecret();
  try {
    const row = await createEndpoint(op.db, {
      organizationId: op.organizationId,
      url: body.url,
      events: body.events ?? [ALL_EVENTS],
      secretSealed: sealSecret(secret, config.WEBHOOK_SECRET_KEY),
    });
    return { body: { ...endpointView(row), secret } };
  } catch (error) {
    if (error instanceof EndpointLimitError) {
      throw errors.invalidState(
        `An organization may have at most ${WEBHOOK_LIMITS.endpointsPerOrganizationMax} webhook endpoints; delete one first.`,
      );
    }
    throw error;
  }
}
