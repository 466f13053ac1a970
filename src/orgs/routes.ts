import { defineRoute } from '../http/route';
import { z } from '../zod';

export const keyVerification = z
  .object({
    organization_name: z.string(),
    organization_id: z.string().openapi({ example: 'org_7fJ2kQ9xLmN3pR5tV8wY1zA4' }),
    environment: z.enum(['sandbox', 'production']),
  })
  .openapi('KeyVerification');

export const keyRoutes = [
  defineRoute({
    method: 'post',
    path: '/keys/verify',
    operationId: 'verifyKey',
    tag: 'Keys',
    summary: 'Test an API key',
    description: 'Answers 200 with the organization the key belongs to; 401 for any key that does not authenticate.',
    response: { schema: keyVerification, description: 'The key authenticates.' },
    async handler({ caller }) {
      return {
        body: {
          organization_name: caller.organization.name,
          organization_id: caller.organization.id,
          environment: caller.environment,
        },
      };
    },
  }),
];
