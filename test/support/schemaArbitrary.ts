import fc from 'fast-check';

/**
 * fast-check arbitraries for the JSON Schema (2020-12) subset the OpenAPI document uses: what a client that
 * reads only the document may send. A string the document marks `x-refined` (a check the schema cannot
 * express: a checksum, a reference to a live resource) takes the document's own `example`.
 */
export type Schema = Record<string, any>;

const LIMITS = { arrayItemsMax: 3, stringLengthMax: 40, dictionaryKeysMax: 3, depthMax: 8 };

export class SchemaArbitraries {
  constructor(private readonly document: Schema) {}

  resolve(schema: Schema): Schema {
    let current = schema;
    while (typeof current.$ref === 'string') {
      const pointer = current.$ref.replace(/^#\//, '').split('/');
      current = pointer.reduce<Schema>((node, key) => node[key.replace(/~1/g, '/').replace(/~0/g, '~')] as Schema, this.document);
    }
    return current;
  }

  of(input: Schema, depth = 0): fc.Arbitrary<unknown> {
    const schema = this.resolve(input);
    if (depth > LIMITS.depthMax) return fc.constant(null);
    if ('const' in schema) return fc.constant(schema.const);
    if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
    if (schema['x-refined'] !== undefined && schema.example !== undefined) return fc.constant(schema.example);
    const branches = (schema.anyOf ?? (schema.oneOf && !schema.properties ? schema.oneOf : undefined)) as Schema[] | undefined;
    if (branches)
      return fc.oneof(...branches.map((branch) => this.of({ ...schema, anyOf: undefined, oneOf: undefined, ...branch }, depth + 1)));
    if (Array.isArray(schema.type)) {
      return fc.oneof(...(schema.type as string[]).map((type) => this.of({ ...schema, type }, depth + 1)));
    }
    switch (schema.type) {
      case 'null':
        return fc.constant(null);
      case 'boolean':
        return fc.boolean();
      case 'integer':
        return fc.integer({ min: lower(schema) ?? -1_000_000, max: upper(schema) ?? 1_000_000 });
      case 'number':
        return fc.double({ min: lower(schema) ?? -1e6, max: upper(schema) ?? 1e6, noNaN: true, noDefaultInfinity: true });
      case 'string':
        return stringOf(schema);
      case 'array':
        return this.arrayOf(schema, depth);
      case 'object':
        return this.objectOf(schema, depth);
      default:
        return schema.properties ? this.objectOf(schema, depth) : fc.constant(null);
    }
  }

  private arrayOf(schema: Schema, depth: number): fc.Arbitrary<unknown[]> {
    const minLength = (schema.minItems as number | undefined) ?? 0;
    const maxLength = Math.min((schema.maxItems as number | undefined) ?? LIMITS.arrayItemsMax, Math.max(minLength, LIMITS.arrayItemsMax));
    const items = this.of((schema.items as Schema | undefined) ?? {}, depth + 1);
    return schema.uniqueItems
      ? fc.uniqueArray(items, { minLength, maxLength, selector: (item) => JSON.stringify(item) })
      : fc.array(items, { minLength, maxLength });
  }

  private objectOf(schema: Schema, depth: number): fc.Arbitrary<Record<string, unknown>> {
    const properties = (schema.properties ?? {}) as Record<string, Schema>;
    let required = new Set<string>((schema.required as string[] | undefined) ?? []);
    let names = Object.keys(properties);
    // oneOf of `required` lists (exactly one of these fields): one branch's fields, none of the others'.
    const exactlyOne = (schema.oneOf as Schema[] | undefined)?.map((branch) => (branch.required ?? []) as string[]);
    if (schema.properties && exactlyOne) {
      return fc.constantFrom(...exactlyOne.keys()).chain((chosen) => {
        const excluded = new Set(exactlyOne.filter((_, i) => i !== chosen).flat());
        return this.objectOf(
          {
            ...schema,
            oneOf: undefined,
            required: [...required, ...exactlyOne[chosen]!],
            properties: Object.fromEntries(names.filter((name) => !excluded.has(name)).map((name) => [name, properties[name]!])),
          },
          depth,
        );
      });
    }
    required = new Set([...required].filter((name) => name in properties));
    names = names.filter((name) => !required.has(name) || name in properties);
    const record = fc.record(Object.fromEntries(names.map((name) => [name, this.of(properties[name]!, depth + 1)])), {
      requiredKeys: [...required],
    });
    const extra = schema.additionalProperties;
    if (names.length === 0 && extra && typeof extra === 'object') {
      return fc.dictionary(fc.stringMatching(/^[a-z_]{1,12}$/), this.of(extra as Schema, depth + 1), {
        maxKeys: Math.min((schema.maxProperties as number | undefined) ?? LIMITS.dictionaryKeysMax, LIMITS.dictionaryKeysMax),
      });
    }
    return record;
  }
}

function lower(schema: Schema): number | undefined {
  if (typeof schema.exclusiveMinimum === 'number') return schema.exclusiveMinimum + (schema.type === 'integer' ? 1 : 1e-6);
  return schema.minimum as number | undefined;
}

function upper(schema: Schema): number | undefined {
  if (typeof schema.exclusiveMaximum === 'number') return schema.exclusiveMaximum - (schema.type === 'integer' ? 1 : 1e-6);
  return schema.maximum as number | undefined;
}

const DAY_MS = 86_400_000;

function stringOf(schema: Schema): fc.Arbitrary<string> {
  const minLength = (schema.minLength as number | undefined) ?? 0;
  const maxLength = Math.min(
    (schema.maxLength as number | undefined) ?? LIMITS.stringLengthMax,
    Math.max(minLength, LIMITS.stringLengthMax),
  );
  const withinLength = (value: string) =>
    value.length >= minLength && value.length <= ((schema.maxLength as number | undefined) ?? Infinity);
  if (typeof schema.pattern === 'string') return fc.stringMatching(new RegExp(schema.pattern)).filter(withinLength);
  // Around now: a date-time filter or window far from today is valid but answers nothing interesting.
  const instant = fc.integer({ min: Date.now() - 7 * DAY_MS, max: Date.now() + DAY_MS }).map((ms) => new Date(ms));
  switch (schema.format) {
    case 'date-time':
      return instant.map((date) => date.toISOString());
    case 'date':
      return instant.map((date) => date.toISOString().slice(0, 10));
    case 'uri':
      return fc.webUrl({ validSchemes: ['https'] }).filter(withinLength);
    case 'email':
      return fc.emailAddress().filter(withinLength);
    default:
      return fc.string({ minLength, maxLength });
  }
}
