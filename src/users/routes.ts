import { defineRoute, retrieveRoute } from '../http/route';
import * as repo from './repo';
import { metadataUpdateBody } from '../metadata/schemas';
import { userCreateBody, userCreated, userIdParams, userList, userListQuery, userSchema } from './schemas';
import { changeUserStatus, createUser, updateUser } from './service';

/** SPEC §6: POST /user, GET /user/{id}, GET /user, and the sandbox's POST /simulate/user/{id}/suspend. */
export const userRoutes = [
  defineRoute({
    method: 'post',
    path: '/user',
    tag: 'Users',
    summary: 'Create a user',
    description: [
      'Registers an end user. Verified users start `enabled`; unverified ones (allowed only when the organization does not require KYC) start `created`.',
      'The `tag` is the idempotency key: a repeated tag returns the original `{ id }` and creates nothing, within the 24-hour idempotency window',
      '(with `Idempotent-Replayed: true`) and after it. Without a tag or an `X-Idempotency-Key`, an identical body within 24 hours is the duplicate.',
      'Each invalid field is one entry of `error.details`, its path in `param` (e.g. `address.postal_code`).',
      'With KYC required (the default) `identity_verified: false` answers 400 `identity_not_verified`.',
    ].join(' '),
    body: userCreateBody,
    idempotency: { bodyField: 'tag' },
    response: { schema: userCreated, description: 'The user (new, or the original one for a repeated tag).' },
    async handler({ caller, db, body, now }) {
      const { user } = await createUser(db, { organization: caller.organization, body, now });
      return { body: { id: user.id } };
    },
  }),
  retrieveRoute({
    path: '/user/{id}',
    tag: 'Users',
    summary: 'Retrieve a user',
    description: "Never returns personal data. Another organization's user id answers 404, exactly like an unknown one.",
    params: userIdParams,
    response: { schema: userSchema, description: 'The user.' },
    resource: 'user',
    find: repo.getUser,
  }),
  defineRoute({
    method: 'post',
    path: '/user/{id}',
    tag: 'Users',
    summary: 'Update a user',
    description: [
      "Merges `metadata` into the user's stored metadata: each key given is set, a `null` value deletes its key, other keys stay.",
      'The merged metadata holds at most 20 keys; a request that would exceed it is a 400 naming the first key past the limit and changes nothing.',
      "Emits `user.updated` with the user. Another organization's user id answers 404, exactly like an unknown one.",
    ].join(' '),
    params: userIdParams,
    body: metadataUpdateBody,
    errorStatuses: [404],
    response: { schema: userSchema, description: 'The user with its merged metadata.' },
    async handler({ caller, db, params, body, now }) {
      return { body: await updateUser(db, { organizationId: caller.organization.id, userId: params.id, body, now }) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/user',
    tag: 'Users',
    summary: 'List users',
    description:
      "Newest first. Page with `limit` and the previous page's `next_cursor`; rows created while paging never cause skips or repeats. `metadata[KEY]=VALUE` keeps users whose metadata holds exactly that value (several keys: all of them).",
    query: userListQuery,
    response: { schema: userList, description: 'One page of users.' },
    async handler({ caller, db, query }) {
      return { body: await repo.listUsers(db, caller.organization.id, query) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/simulate/user/{id}/suspend',
    tag: 'Simulation',
    summary: 'Suspend a user (sandbox)',
    description: [
      "Moves an `enabled` user to `suspended`, as an operator's compliance team would; a suspended user cannot move money.",
      'A user already suspended is returned unchanged. `created` and `disabled` users answer 409 `invalid_state`.',
      'Like every POST, an identical request within 24 hours replays the first answer: send a fresh `X-Idempotency-Key` to suspend again after a re-enable.',
    ].join(' '),
    params: userIdParams,
    sandboxOnly: true,
    errorStatuses: [404],
    response: { schema: userSchema, description: 'The user, now suspended.' },
    async handler({ caller, db, params, now }) {
      const change = await changeUserStatus(db, {
        userId: params.id,
        organizationId: caller.organization.id,
        to: 'suspended',
        source: 'simulation',
        now,
      });
      return { body: change.user };
    },
  }),
];
