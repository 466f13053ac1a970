import ipaddr from 'ipaddr.js';
import { withTransaction, type Pool, type Queryable } from '../db/pool';
import { newId } from '../ids';
import { generateApiKey, hashApiKey, type Environment, type Organization } from '../http/apiKeys';
import { rowOf } from '../assert';

/** SQL owned by organizations, their accounts, keys, allowlists and rate limits. */

export type { Organization };

export interface Account {
  id: string;
  organization_id: string;
  type: 'settlement';
  name: string;
  created_at: Date;
}

export interface IssuedKey {
  id: string;
  api_key: string;
  environment: Environment;
  last4: string;
}

export class NotFoundError extends Error {
  override name = 'NotFoundError';
}

export async function createOrganization(
  pool: Pool,
  input: { name: string; kycRequired: boolean; environment: Environment; accountName?: string },
): Promise<{ organization: Organization; account: Account; key: IssuedKey }> {
  return withTransaction(pool, async (tx) => {
    const { rows } = await tx.query<Organization>(`INSERT INTO organizations (id, name, kyc_required) VALUES ($1, $2, $3) RETURNING *`, [
      newId('org'),
      input.name,
      input.kycRequired,
    ]);
    const organization = rowOf(rows, 'INSERT … RETURNING answers the organization it inserted');
    const account = await createAccount(tx, organization.id, input.accountName ?? 'Operational');
    const key = await createKey(tx, organization.id, input.environment);
    return { organization, account, key };
  });
}

export async function getOrganization(db: Queryable, organizationId: string): Promise<Organization> {
  const { rows } = await db.query<Organization>(`SELECT * FROM organizations WHERE id = $1`, [organizationId]);
  if (!rows[0]) throw new NotFoundError(`no organization ${organizationId}`);
  return rows[0];
}

export async function countOrganizations(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM organizations`);
  return rowOf(rows, 'count(*) answers one row').n;
}

export async function createAccount(db: Queryable, organizationId: string, name: string): Promise<Account> {
  await getOrganization(db, organizationId);
  const { rows } = await db.query<Account>(`INSERT INTO accounts (id, organization_id, name) VALUES ($1, $2, $3) RETURNING *`, [
    newId('account'),
    organizationId,
    name,
  ]);
  return rowOf(rows, 'INSERT … RETURNING answers the account it inserted');
}

export async function createKey(db: Queryable, organizationId: string, environment: Environment): Promise<IssuedKey> {
  await getOrganization(db, organizationId);
  const apiKey = generateApiKey(environment);
  const id = newId('key');
  const last4 = apiKey.slice(-4);
  await db.query(`INSERT INTO api_keys (id, organization_id, environment, key_hash, last4) VALUES ($1, $2, $3, $4, $5)`, [
    id,
    organizationId,
    environment,
    hashApiKey(apiKey),
    last4,
  ]);
  return { id, api_key: apiKey, environment, last4 };
}

export interface KeyRecord {
  id: string;
  environment: Environment;
  last4: string;
  created_at: Date;
  revoked_at: Date | null;
}

export async function listKeys(db: Queryable, organizationId: string): Promise<KeyRecord[]> {
  await getOrganization(db, organizationId);
  const { rows } = await db.query<KeyRecord>(
    `SELECT id, environment, last4, created_at, revoked_at FROM api_keys WHERE organization_id = $1 ORDER BY created_at, id`,
    [organizationId],
  );
  return rows;
}

export async function revokeKey(db: Queryable, keyId: string): Promise<KeyRecord> {
  const { rows } = await db.query<KeyRecord>(
    `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1
     RETURNING id, environment, last4, created_at, revoked_at`,
    [keyId],
  );
  if (!rows[0]) throw new NotFoundError(`no key ${keyId}`);
  return rows[0];
}

/** Normalizes an address or CIDR range; `::ffff:a.b.c.d` becomes `a.b.c.d` so both forms match alike. */
export function normalizeCidr(input: string): string {
  const trimmed = input.trim();
  try {
    if (trimmed.includes('/')) {
      const [address, prefix] = ipaddr.parseCIDR(trimmed);
      if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() && prefix >= 96) {
        return `${(address as ipaddr.IPv6).toIPv4Address().toString()}/${prefix - 96}`;
      }
      return `${address.toNormalizedString()}/${prefix}`;
    }
    const address = ipaddr.process(trimmed);
    // A zone (`%eth0`) names a local interface, meaningless for a remote client's address.
    const plain = address.kind() === 'ipv6' ? new ipaddr.IPv6((address as ipaddr.IPv6).parts) : address;
    return `${plain.toString()}/${plain.kind() === 'ipv4' ? 32 : 128}`;
  } catch {
    throw new InvalidCidrError(`not an IPv4/IPv6 address or CIDR range: '${input}'`);
  }
}

export class InvalidCidrError extends Error {
  override name = 'InvalidCidrError';
}

export async function addAllowlistEntry(db: Queryable, organizationId: string, cidr: string): Promise<string> {
  await getOrganization(db, organizationId);
  const normalized = normalizeCidr(cidr);
  // cidr() masks host bits, so 10.0.0.7/8 is stored as the range 10.0.0.0/8 it names.
  const { rows } = await db.query<{ cidr: string }>(
    `INSERT INTO ip_allowlist (organization_id, cidr) VALUES ($1, network($2::inet)::cidr)
     ON CONFLICT (organization_id, cidr) DO UPDATE SET cidr = EXCLUDED.cidr RETURNING cidr::text`,
    [organizationId, normalized],
  );
  return rowOf(rows, 'an upsert … RETURNING answers its row').cidr;
}

export async function removeAllowlistEntry(db: Queryable, organizationId: string, cidr: string): Promise<boolean> {
  await getOrganization(db, organizationId);
  const { rowCount } = await db.query(`DELETE FROM ip_allowlist WHERE organization_id = $1 AND cidr = network($2::inet)::cidr`, [
    organizationId,
    normalizeCidr(cidr),
  ]);
  return (rowCount ?? 0) > 0;
}

export async function listAllowlist(db: Queryable, organizationId: string): Promise<string[]> {
  await getOrganization(db, organizationId);
  const { rows } = await db.query<{ cidr: string }>(`SELECT cidr::text FROM ip_allowlist WHERE organization_id = $1 ORDER BY cidr`, [
    organizationId,
  ]);
  return rows.map((row) => row.cidr);
}

export async function setRateLimits(
  db: Queryable,
  organizationId: string,
  limits: { write?: number; read?: number },
): Promise<Organization> {
  const { rows } = await db.query<Organization>(
    `UPDATE organizations SET rate_limit_write = coalesce($2, rate_limit_write), rate_limit_read = coalesce($3, rate_limit_read)
     WHERE id = $1 RETURNING *`,
    [organizationId, limits.write ?? null, limits.read ?? null],
  );
  if (!rows[0]) throw new NotFoundError(`no organization ${organizationId}`);
  return rows[0];
}

export async function listAccounts(db: Queryable, organizationId: string): Promise<Account[]> {
  const { rows } = await db.query<Account>(`SELECT * FROM accounts WHERE organization_id = $1 ORDER BY created_at DESC, id DESC`, [
    organizationId,
  ]);
  return rows;
}
