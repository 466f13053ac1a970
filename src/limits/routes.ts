import { errors } from '../errors';
import { defineRoute } from '../http/route';
import { userIdParams, userSchema } from '../users/contract';
import { limitsSchema, limitsUpdateBody, selfExclusionBody } from './schemas';
import { selfExclude, selfExclusionEndOf } from './selfExclusion';
import { getLimits, setLimits } from './service';

/** SPEC §26: PUT and GET /user/{id}/limits, POST /user/{id}/self_exclusion. */
export const limitRoutes = [
  defineRoute({
    method: 'put',
    path: '/user/{id}/limits',
    operationId: 'updateUserLimits',
    tag: 'Limits',
    summary: "Set a user's limits",
    description: [
      'Sets the limit of each period given (integer cents ≥ 0, or null for none); periods left out keep theirs. Periods are Eastern calendar',
      'periods: the day, the ISO week (Monday first), the month. Lowering takes effect at once and replaces any pending raise; raising or',
      'removing a limit takes effect after LIMIT_RAISE_COOLING_OFF_HOURS (24 by default) and waits under `pending` until then.',
      'The same request again changes nothing (a raise already waiting keeps its time). Each approval (POST /intent, batch items,',
      '/authorize, /intent/{id}/approve) that would take the period over a limit is declined `limit_exceeded`.',
      'A change emits `user.limits_changed` with the limits and their pending raises. Bad input is a 400 naming the field and changes nothing.',
    ].join(' '),
    params: userIdParams,
    body: limitsUpdateBody,
    errorStatuses: [404],
    response: { schema: limitsSchema, description: "The user's limits after the change." },
    async handler({ op, params, body }) {
      return setLimits(op, params.id, body);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/user/{id}/limits',
    operationId: 'retrieveUserLimits',
    tag: 'Limits',
    summary: "Retrieve a user's limits",
    description:
      "The limits in force (the user's own, else the organization's defaults), the raises waiting out their cooling-off, and what the current Eastern day, week and month have used.",
    params: userIdParams,
    errorStatuses: [404],
    response: { schema: limitsSchema, description: "The user's limits." },
    async handler({ caller, db, params, now }) {
      const limits = await getLimits(db, caller.organization.id, params.id, now);
      if (!limits) throw errors.notFound('user', params.id);
      return { body: limits };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/user/{id}/self_exclusion',
    operationId: 'createUserSelfExclusion',
    tag: 'Limits',
    summary: 'Self-exclude a user',
    description: [
      'Suspends the user (`status: suspended`, `suspended_reason: self_exclusion`) until `until` — a date-time 1 day to 5 years ahead — or',
      'indefinitely. Nothing lifts it early: no API call or CLI command changes the user’s status before then. At `until` a durable timer',
      'returns the user to the status it had before (`enabled`). A later `until` extends a running exclusion; an earlier one is 409',
      '`invalid_state`. `created` and `disabled` users answer 409. Emits `user.self_excluded` (and `user.status_changed`).',
    ].join(' '),
    params: userIdParams,
    body: selfExclusionBody,
    errorStatuses: [404],
    response: { schema: userSchema, description: 'The user, self-excluded.' },
    async handler({ op, params, body, now }) {
      return selfExclude(op, params.id, selfExclusionEndOf(body, now));
    },
  }),
];
