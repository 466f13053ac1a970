import { apiClient, createTestOrg, startStack, type Stack } from './support/harness';

describe('SPEC §14 operability', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack.stop();
  });

  test('/readyz answers 200 when Postgres and Temporal are both reachable', async () => {
    const response = await fetch(`${stack.url}/readyz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ready', checks: { postgres: 'ok', temporal: 'ok' } });
  });

  test('POST /keys/verify names the caller organization', async () => {
    const org = await createTestOrg(stack.pool);
    const response = await apiClient(stack.url, org.apiKey)('POST', '/keys/verify');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ organization_id: org.organizationId, environment: 'sandbox' });
    expect(response.headers.get('x-request-id')).toMatch(/^req_[A-Za-z0-9]{16,}$/);
  });
});
