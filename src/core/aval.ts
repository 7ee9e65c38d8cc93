/** @file Abstract values: ShapedArray (shape, dtype, weak type), the type every trace reasons about. */
import { type DType, shortName } from "./dtype.js";
import { type Shape, prod, shapesEqual } from "./shape.js";

/**
 * The abstract value of an array. Later layers extend it with a sharding and the set of
 * manual mesh axes it varies over (shardMap); those fields are optional so the core stays small.
 */
export class ShapedArray {
  readonly shape: readonly number[];
  constructor(
    shape: Shape,
    readonly dtype: DType,
    readonly weakType = false,
  ) {
    this.shape = Object.freeze([...shape]);
  }
  get ndim(): number {
    return this.shape.length;
  }
  get size(): number {
    return prod(this.shape);
  }
  /** JAX's short form, e.g. f32[3,4]. */
  // str() and key() are memoized (the fields are frozen): call-signature caches build them on every call
  #str?: string;
  #key?: string;
  str(): string {
    return (this.#str ??= `${shortName(this.dtype)}[${this.shape.join(",")}]`);
  }
  toString(): string {
    return this.str();
  }
  equals(o: ShapedArray): boolean {
    return this.dtype === o.dtype && this.weakType === o.weakType && shapesEqual(this.shape, o.shape);
  }
  /** Equal up to weak type (what type checking needs). */
  sameType(o: ShapedArray): boolean {
    return this.dtype === o.dtype && shapesEqual(this.shape, o.shape);
  }
  update(u: { shape?: Shape; dtype?: DType; weakType?: boolean }): ShapedArray {
    return new ShapedArray(u.shape ?? this.shape, u.dtype ?? this.dtype, u.weakType ?? this.weakType);
  }
  strongly(): ShapedArray {
    return this.weakType ? new ShapedArray(this.shape, this.dtype, false) : this;
  }
  key(): string {
    return (this.#key ??= `${this.dtype}${this.weakType ? "~" : ""}[${this.shape.join(",")}]`);
  }
}

export const avalsStr = (avals: readonly ShapedArray[]): string => avals.map((a) => a.str()).join(", ");
