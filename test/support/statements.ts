import pg from 'pg';

/**
 * The statements each database connection of this process sent while `during` ran, in order, one list per
 * connection (each statement is one round trip: node-postgres never pipelines). Finds the write under test by
 * a statement only it sends.
 */
export async function statementsSent(during: () => Promise<void>): Promise<string[][]> {
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  const sent = new Map<object, string[]>();
  proto.query = function (this: object, ...args: unknown[]) {
    const text = typeof args[0] === 'string' ? args[0] : String((args[0] as { text?: string } | undefined)?.text);
    sent.set(this, [...(sent.get(this) ?? []), text]);
    return original.apply(this, args);
  };
  try {
    await during();
  } finally {
    proto.query = original;
  }
  return [...sent.values()];
}

/**
 * The round trips of the one connection that sent a statement containing `marker`: from the last `BEGIN` before
 * `from` (a statement containing it; the marker's own when not given) to the `COMMIT` after the marker, both counted.
 */
export function roundTripsAround(connections: string[][], marker: string, from?: string): number {
  const statements = connections.find((texts) => texts.some((text) => text.includes(marker)));
  if (!statements) throw new Error(`no connection sent a statement containing ${marker}`);
  const marked = statements.findIndex((text) => text.includes(marker));
  const start =
    from === undefined
      ? statements
          .slice(0, marked)
          .map((text) => text.startsWith('BEGIN'))
          .lastIndexOf(true)
      : statements.findIndex((text) => text.includes(from));
  const commit = statements.findIndex((text, i) => i > marked && text === 'COMMIT');
  if (start < 0 || commit < 0) throw new Error(`no BEGIN or COMMIT around ${marker}: ${statements.join(' | ')}`);
  return commit - start + 1;
}
