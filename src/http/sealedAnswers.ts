import type { Config } from '../config';
import { isSealed, seal, unseal } from '../sealed';
import type { AnyRoute } from './route';

/**
 * Stored idempotent answers that show a secret rest sealed and replay byte for byte once opened. JSON text
 * never starts with the sealed prefix, so the stored form tells which it is. Sandbox without
 * WEBHOOK_SECRET_KEY has nothing to seal with and stores the answer as is (production requires the key).
 */
export function storedAnswerText(route: AnyRoute, config: Pick<Config, 'WEBHOOK_SECRET_KEY'>, text: string): string {
  return route.idempotency?.sealsAnswer && config.WEBHOOK_SECRET_KEY ? seal(text, config.WEBHOOK_SECRET_KEY) : text;
}

export function replayedAnswerText(config: Pick<Config, 'WEBHOOK_SECRET_KEY'>, stored: string): string {
  return isSealed(stored) ? unseal(stored, config.WEBHOOK_SECRET_KEY) : stored;
}
