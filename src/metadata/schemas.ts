import { errors } from '../errors';
import { z } from '../zod';

/**
 * SPEC §18: the operator's own key/value pairs on users, intents and refunds. These schemas are the one
 * source for validating bodies and filters, the `Metadata` type and the OpenAPI document; a bad key or value
 * is reported at its own path, so the error names `metadata.<key>`.
 */

export const METADATA_LIMITS = {
  keysMax: 20,
  keyLengthMax: 40,
  valueLengthMax: 500,
  /** An update may delete every stored key and add as many new ones in one request. */
  updateKeysMax: 40,
};

const KEY_RULE = `1 to ${METADATA_LIMITS.keyLengthMax} characters from A-Z, a-z, 0-9, _ and - (except \`__proto__\`)`;
const KEY_PATTERN = new RegExp(`^[A-Za-z0-9_-]{1,${METADATA_LIMITS.keyLengthMax}}$`);

const metadataKey = z.string().regex(KEY_PATTERN);
/**
 * `__proto__` fits the pattern but is refused: zod leaves it out of a parsed record (assigning it would set
 * the prototype), so it would vanish silently instead of being stored or filtered by.
 */
const RESERVED_KEY = '__proto__';
/** OpenAPI 3.1 (JSON Schema) says what keys may be; the generator's metadata type predates `propertyNames`. */
const KEY_NAMES = { propertyNames: { pattern: KEY_PATTERN.source } } as object;

const metadataValue = z
  .string({ error: 'must be a string' })
  .max(METADATA_LIMITS.valueLengthMax, `must be at most ${METADATA_LIMITS.valueLengthMax} characters`);

/** A record of `value` under valid keys, of at most `keysMax` keys; the first key past the limit is the one named. */
function metadataRecord<V extends z.ZodType>(value: V, keysMax: number) {
  const record = z
    .record(metadataKey, value, {
      error: (issue) => (issue.code === 'invalid_key' ? `is not a valid key: keys are ${KEY_RULE}` : 'must be an object of string values'),
    })
    .superRefine((metadata, ctx) => {
      const keys = Object.keys(metadata);
      if (keys.length > keysMax) ctx.addIssue({ code: 'custom', path: [keys[keysMax]!], message: `exceeds the limit of ${keysMax} keys` });
    });
  return z
    .preprocess((input, ctx) => {
      if (typeof input === 'object' && input !== null && Object.hasOwn(input, RESERVED_KEY)) {
        ctx.addIssue({ code: 'custom', path: [RESERVED_KEY], message: `is not a valid key: keys are ${KEY_RULE}` });
      }
      return input;
    }, record)
    .openapi({ maxProperties: keysMax, ...KEY_NAMES });
}

const example = { order_id: 'order-1234', channel: 'web' };

export const metadataSchema = metadataRecord(metadataValue, METADATA_LIMITS.keysMax).openapi('Metadata', {
  description: `The operator's own key/value pairs: up to ${METADATA_LIMITS.keysMax} keys of ${KEY_RULE}, each value a string of at most ${METADATA_LIMITS.valueLengthMax} characters. \`{}\` when none were given. The ledger never reads them; lists filter by them (\`metadata[KEY]=VALUE\`).`,
  example,
});
export type Metadata = z.infer<typeof metadataSchema>;

/** The optional `metadata` field of a create body (POST /user, /intent, /authorize, /refund). */
export const metadataField = metadataSchema.optional();

/** POST /user/{id}, POST /intent/{id}: the keys to set, `null` for each key to delete. */
export const metadataUpdateBody = z
  .strictObject({
    metadata: metadataRecord(metadataValue.nullable(), METADATA_LIMITS.updateKeysMax).openapi({
      description: `Merged into the stored metadata: each key given is set to its value, a \`null\` value deletes its key, keys not given stay. The result holds at most ${METADATA_LIMITS.keysMax} keys.`,
      example: { order_id: 'order-1234', channel: null },
    }),
  })
  .openapi('MetadataUpdate', { example: { metadata: { order_id: 'order-1234', channel: null } } });
export type MetadataUpdateBody = z.infer<typeof metadataUpdateBody>;

/**
 * `metadata[KEY]=VALUE` on a list (the edge's query parser folds the brackets into an object): exact match,
 * several keys AND together.
 */
export const metadataFilter = metadataRecord(metadataValue, METADATA_LIMITS.keysMax)
  .optional()
  .openapi({
    description: `\`metadata[KEY]=VALUE\`: only resources whose metadata holds exactly this value under KEY (${KEY_RULE}); several keys must all match.`,
    param: { style: 'deepObject', explode: true },
    example: { order_id: 'order-1234' },
  });

/**
 * The stored metadata with `update` applied: keys with a value set, keys with `null` deleted, the rest kept.
 * A result over the limit is a 400 naming the first key the update adds past it.
 */
export function mergeMetadata(stored: Metadata, update: Record<string, string | null>): Metadata {
  const merged: Metadata = { ...stored };
  for (const [key, value] of Object.entries(update)) {
    if (value === null) delete merged[key];
    else merged[key] = value;
  }
  const keys = Object.keys(merged);
  if (keys.length > METADATA_LIMITS.keysMax) {
    const added = keys.filter((key) => !(key in stored));
    const named = added[added.length - (keys.length - METADATA_LIMITS.keysMax)] ?? added[0]!;
    throw errors.validation([
      { param: `metadata.${named}`, message: `would make the metadata exceed the limit of ${METADATA_LIMITS.keysMax} keys` },
    ]);
  }
  return merged;
}
