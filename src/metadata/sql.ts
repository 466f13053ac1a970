import type { Filters } from '../db/paging';
import type { Metadata } from './schemas';

/**
 * `metadata[KEY]=VALUE` filters as SQL: one `@>` containment per list, which the table's GIN index
 * (jsonb_path_ops, migrations/0022_metadata.sql) answers without reading rows that do not match.
 * No filter (absent or no keys) adds nothing.
 */
export function metadataContains(filters: Filters, alias: string, metadata: Metadata | undefined): Filters {
  if (!metadata || Object.keys(metadata).length === 0) return filters;
  return filters.add(`${alias}.metadata @> ?::jsonb`, JSON.stringify(metadata));
}

/**
 * GET /transaction's `metadata[KEY]=VALUE`: a transaction carries no metadata, its source does (the intent or
 * refund that made it; a dispute has none). The matching sources are found first through their GIN indexes,
 * then their transactions through transactions_by_source: ARRAY(...) is computed once, so the planner never
 * walks the organization's whole list testing each row against the sources.
 */
export function sourceMetadataContains(filters: Filters, alias: string, metadata: Metadata | undefined): Filters {
  if (!metadata || Object.keys(metadata).length === 0) return filters;
  return filters.add(
    `${alias}.source_id = ANY (ARRAY(
       SELECT i.id FROM intents i WHERE i.organization_id = $1 AND i.metadata @> ?::jsonb
       UNION ALL SELECT r.id FROM refunds r WHERE r.organization_id = $1 AND r.metadata @> ?::jsonb))`,
    JSON.stringify(metadata),
  );
}
