import pg from 'pg';

export default async function globalTeardown(): Promise<void> {
  await globalThis.__ledgerTemporal?.stop();
  const adminUrl = process.env.LEDGER_TEST_ADMIN_URL;
  const database = process.env.LEDGER_TEST_DATABASE;
  if (adminUrl && database && !process.env.LEDGER_TEST_KEEP_DATABASE) {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.query(`DROP DATABASE IF EXISTS ${database}_template WITH (FORCE)`);
    await admin.end();
  }
}
