// The users feature as other features see it: they import it only through this module (the
// dependency lint's features-meet-through-contracts, docs/development.md "Layers"), so what one feature
// takes from another is this list.
export { getUserStatus, lockUser, lockUsers, setSelfExclusion, setStatusSource, updateUsersStatus } from './repo';
export { userIdParams, userSchema, userStatus, type User, type UserStatus } from './schemas';
