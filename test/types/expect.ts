/** @file tsd-style type assertions checked by the compiler (`npm test` builds test/types/ with tsc; nothing here runs). */

/** True when X and Y are the same type (mutual assignability is not enough: `any` and unions must match exactly). */
export type Equal<X, Y> = (<T>() => T extends X ? 1 : 2) extends <T>() => T extends Y ? 1 : 2 ? true : false;

/**
 * expectType<T>(value): compiles only when value's type is exactly T. The `...exact` rest parameter is empty when the
 * types agree and demands an impossible argument otherwise, so a widened or narrowed type is a compile error.
 */
export function expectType<T>(): <V>(
  value: V,
  ...exact: Equal<T, V> extends true ? [] : [expected: T, got: V, never]
) => void {
  return () => undefined;
}

/** expectAssignable<T>(value): value's type is assignable to T (tsd's expectAssignable). */
export function expectAssignable<T>(value: T): void {
  void value;
}
