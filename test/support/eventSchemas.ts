import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

/**
 * Holds events to the document's schema for their type, found through WebhookEvent's discriminator mapping of
 * the stack's own /openapi.json: `departures(event)` is each way the event differs, empty when it fits.
 */
export async function eventDepartures(baseUrl: string): Promise<{ types: string[]; departures: (event: unknown) => string[] }> {
  const document = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as {
    components: { schemas: { WebhookEvent: { discriminator: { mapping: Record<string, string> } } } };
  };
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(document, 'openapi.json');
  const validators = new Map(
    Object.entries(document.components.schemas.WebhookEvent.discriminator.mapping).map(([type, ref]) => {
      const validate = ajv.getSchema(`openapi.json${ref}`);
      if (!validate) throw new Error(`WebhookEvent maps ${type} to ${ref}, which the document does not hold`);
      return [type, validate] as const;
    }),
  );
  return {
    types: [...validators.keys()],
    departures(event: unknown): string[] {
      const { type } = event as { type: string };
      const validate = validators.get(type);
      if (!validate) return [`${type}: no schema in WebhookEvent's discriminator mapping`];
      return validate(event) ? [] : (validate.errors ?? []).map((error) => `${type} ${error.instancePath} ${error.message}`);
    },
  };
}
