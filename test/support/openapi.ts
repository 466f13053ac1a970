/**
 * Holds what a route really answered against what /openapi.json documents for it, so a suite's OpenAPI check
 * fails when the document and the API drift apart (`npm run lint:openapi` checks only the document's shape).
 */

type Schema = {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  items?: Schema;
  allOf?: Schema[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  nullable?: boolean;
  example?: unknown;
};

interface Document {
  paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema?: Schema }> }> }>>;
  components: { schemas: Record<string, Schema> };
}

export interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function typeMatches(declared: string | string[], value: unknown, nullable: boolean): boolean {
  const actual = typeOf(value);
  const allowed = [declared].flat().concat(nullable ? ['null'] : []);
  return allowed.includes(actual) || (actual === 'integer' && allowed.includes('number'));
}

/** Every way `value` departs from `schema`, each as "where: what". */
function mismatches(document: Document, schema: Schema, value: unknown, at: string): string[] {
  if (schema.$ref) return mismatches(document, document.components.schemas[schema.$ref.split('/').pop()!] ?? {}, value, at);
  if (schema.allOf) return schema.allOf.flatMap((part) => mismatches(document, part, value, at));
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) {
    const each = alternatives.map((part) => mismatches(document, part, value, at));
    return each.some((found) => found.length === 0)
      ? []
      : [`${at}: matches none of its ${alternatives.length} alternatives (${each.flat()[0]})`];
  }
  if (schema.type !== undefined && !typeMatches(schema.type, value, schema.nullable === true))
    return [`${at}: ${typeOf(value)} where ${[schema.type].flat().join(' or ')} is documented`];
  if (schema.enum && !schema.enum.includes(value)) return [`${at}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`];
  if (Array.isArray(value) && schema.items)
    return value.flatMap((item, index) => mismatches(document, schema.items!, item, `${at}[${index}]`));
  if (typeOf(value) !== 'object' || !schema.properties) return [];
  const record = value as Record<string, unknown>;
  const found = (schema.required ?? []).filter((name) => !(name in record)).map((name) => `${at}.${name}: required but absent`);
  for (const [name, field] of Object.entries(record)) {
    const declared = schema.properties[name];
    if (declared) found.push(...mismatches(document, declared, field, `${at}.${name}`));
    else if (typeof schema.additionalProperties === 'object')
      found.push(...mismatches(document, schema.additionalProperties, field, `${at}.${name}`));
    else if (schema.additionalProperties !== true) found.push(`${at}.${name}: answered but not documented`);
  }
  return found;
}

/**
 * How `answer` (a real response of `method path`) departs from the operation's documentation: an undocumented
 * operation or status, an undocumented media type, or a JSON body that does not fit the documented schema.
 * Empty when they agree.
 */
export function undocumented(document: unknown, method: string, path: string, answer: Answer): string[] {
  const doc = document as Document;
  const operation = doc.paths[path]?.[method.toLowerCase()];
  if (!operation) return [`${method.toUpperCase()} ${path} is not documented`];
  const response = operation.responses[String(answer.status)];
  if (!response) return [`${method.toUpperCase()} ${path} answered ${answer.status}, not a documented status`];
  const mediaType = (answer.headers.get('content-type') ?? '').split(';')[0]!.trim();
  const content = response.content?.[mediaType];
  if (!content) return [`${method.toUpperCase()} ${path} ${answer.status} answered ${mediaType || 'no body'}, not a documented media type`];
  return mediaType === 'application/json' && content.schema ? mismatches(doc, content.schema, answer.body, 'body') : [];
}

/** How the `example` of a component schema departs from the schema itself; absent is a departure too. */
export function exampleMismatches(document: unknown, schemaName: string): string[] {
  const doc = document as Document;
  const schema = doc.components.schemas[schemaName];
  if (!schema) return [`${schemaName} is not a documented schema`];
  if (schema.example === undefined) return [`${schemaName} has no example`];
  return mismatches(doc, schema, schema.example, `${schemaName}.example`);
}

/** Every answer as documented: `[method, path pattern, answer]`, each checked by `undocumented`. */
export function expectDocumented(document: unknown, answers: [string, string, Answer][]): void {
  expect(answers.flatMap(([method, path, answer]) => undocumented(document, method, path, answer))).toEqual([]);
}
