/** The store cannot be opened or used as asked (unreachable, not a store, not empty): an operator's problem, told in one line. */
export class StoreError extends Error {
  override name = 'StoreError';
}
