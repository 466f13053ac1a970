import type { Queryable } from '../db/pool';

/**
 * The journal's own invariants (SPEC §21) over the accounts' entries: every entry's postings sum to zero;
 * every transition wrote its entry exactly once (a transaction's recording and confirmation, a transfer's
 * creation and settlement); and every snapshot equals the sums of the entries stamped before it.
 */
export async function journalViolations(db: Queryable, accountIds: string[]): Promise<Array<{ problem: string }>> {
  const { rows } = await db.query<{ problem: string }>(
    `SELECT format('entry %s: postings sum to %s', entry_id, sum(amount_cents)) AS problem
       FROM journal_postings WHERE account_id = ANY($1) GROUP BY entry_id HAVING sum(amount_cents) <> 0
     UNION ALL
     SELECT format('transaction %s (%s %s): %s %s entries, expected %s', t.id, t.direction, t.status, coalesce(e.n, 0), k.kind, k.expected)
       FROM transactions t
       CROSS JOIN LATERAL (VALUES (t.direction || '_recorded', 1),
                                  ('cash_in_confirmed', CASE WHEN t.direction = 'cash_in' AND t.status <> 'pending' THEN 1 ELSE 0 END)) k (kind, expected)
       LEFT JOIN LATERAL (SELECT count(*) AS n FROM journal_entries e WHERE e.transaction_id = t.id AND e.kind = k.kind) e ON true
      WHERE t.account_id = ANY($1) AND coalesce(e.n, 0) <> k.expected
     UNION ALL
     SELECT format('transfer %s (%s): %s %s entries of net %s, expected %s', tr.id, tr.status, e.n, k.kind, e.net, k.expected)
       FROM transfers tr
       CROSS JOIN LATERAL (VALUES ('transfer_created', 1), ('transfer_settled', CASE tr.status WHEN 'settled' THEN 1 ELSE 0 END)) k (kind, expected)
       CROSS JOIN LATERAL (SELECT count(*) AS n, sum(amount_cents) AS net FROM journal_entries e WHERE e.transfer_id = tr.id AND e.kind = k.kind) e
      WHERE tr.account_id = ANY($1)
        AND (e.n <> k.expected OR (e.n = 1 AND e.net <> transfer_signed_cents(tr.direction, tr.amount_cents)))
     UNION ALL
     SELECT format('snapshot of %s at %s: %s/%s/%s, the journal says %s/%s/%s', s.account_id, s.at, s.pending_cents, s.available_cents,
                   s.in_transfer_cents, j.pending, j.available, j.in_transfer)
       FROM journal_snapshots s
       CROSS JOIN LATERAL (SELECT coalesce(sum(journal_bucket_cents('pending', from_bucket, to_bucket, amount_cents)), 0) AS pending,
                                  coalesce(sum(journal_bucket_cents('available', from_bucket, to_bucket, amount_cents)), 0) AS available,
                                  coalesce(sum(journal_bucket_cents('in_transfer', from_bucket, to_bucket, amount_cents)), 0) AS in_transfer
                             FROM journal_entries e WHERE e.account_id = s.account_id AND e.created_at < s.at) j
      WHERE s.account_id = ANY($1)
        AND (s.pending_cents, s.available_cents, s.in_transfer_cents) IS DISTINCT FROM (j.pending, j.available, j.in_transfer)`,
    [accountIds],
  );
  return rows;
}
