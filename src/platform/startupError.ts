/**
 * A start-up failure whose cause is known and told in the message (a busy port, a component that keeps
 * dying): the process prints the message alone, without a stack, and exits 1.
 */
export class StartupError extends Error {
  override name = 'StartupError';
}
