/**
 * @file config debugNans / debugInfs (jax_debug_nans, jax_debug_infs): every executed primitive's float outputs are
 * checked; a NaN (or ±inf) raises a FloatingPointError naming the primitive. A jitted program runs whole and
 * unchecked first; when its outputs hold one, its jaxpr is re-run equation by equation (as JAX's de-optimized
 * re-run) to name the first offending equation and the user's source line that traced it.
 */
import { ArrayImpl } from "./array-impl.js";
import { config, onConfigChange } from "./config.js";
import { FloatingPointError } from "./errors.js";
import { type Atom, Jaxpr, Literal, type Var, jaxprEqnLine } from "./jaxpr.js";
import type { Params, Primitive } from "./primitive.js";
import { userSite } from "./source-site.js";
import { type RawExecute, evalTrace, executePrimitive, setSpecialCheck, withTrace } from "./trace.js";

/** "nan" / "inf" when some float output holds one that the enabled flags look for (NaN first, as JAX); else null. */
function findSpecial(outs: readonly ArrayImpl[]): "nan" | "inf" | null {
  const nans = config.debugNans,
    infs = config.debugInfs;
  for (const o of outs) {
    const d = o.aval.dtype;
    if (d === "float32" || d === "float64") {
      const b = o.buffer as Float32Array | Float64Array;
      let sawInf = false;
      for (let i = 0; i < b.length; i++) {
        const v = b[i];
        if (v - v !== 0) {
          if (v !== v) {
            if (nans) return "nan";
          } else sawInf = true;
        }
      }
      if (sawInf && infs) return "inf";
    } else if (d === "float16" || d === "bfloat16") {
      // an all-ones exponent: NaN when the mantissa is non-zero, else ±inf
      const [em, mm] = d === "float16" ? [0x7c00, 0x03ff] : [0x7f80, 0x007f];
      const b = o.buffer as Uint16Array;
      let sawInf = false;
      for (let i = 0; i < b.length; i++) {
        if ((b[i] & em) === em) {
          if (b[i] & mm) {
            if (nans) return "nan";
          } else sawInf = true;
        }
      }
      if (sawInf && infs) return "inf";
    }
  }
  return null;
}

/** Depth of jitted programs running whole: their inner equations are not checked one by one (the outputs are). */
let unchecked = 0;

function checked(prim: Primitive, args: ArrayImpl[], params: Params, run: RawExecute): ArrayImpl[] {
  if (unchecked > 0) return run(prim, args, params);
  if (prim.name === "pjit" && params.jaxpr instanceof Jaxpr) {
    const disposed = () => args.some((a) => a.isDisposed);
    unchecked++;
    let outs: ArrayImpl[];
    try {
      outs = run(prim, args, params);
    } finally {
      unchecked--;
    }
    const kind = findSpecial(outs);
    if (kind === null) return outs;
    const name = `jit(${String(params.name)})`;
    if (disposed()) {
      throw new FloatingPointError(
        name,
        kind,
        undefined,
        userSite(),
        "An argument was donated (donateArgnums), so the program cannot be re-run equation by equation to find the first invalid value; call it without donation to locate it.",
      );
    }
    rerun(params.jaxpr, args, name);
    throw new FloatingPointError(
      name,
      kind,
      undefined,
      userSite(),
      "Because debugNans/debugInfs is set, the jaxpr was re-run equation by equation, but no equation produced an invalid value there: " +
        "the compiled program's numerics differ (e.g. fused operations), or an invalid value was an input or constant passed through to the output.",
    );
  }
  const outs = run(prim, args, params);
  const kind = findSpecial(outs);
  if (kind !== null) throw new FloatingPointError(prim.name, kind, undefined, userSite());
  return outs;
}

/** Evaluates a jitted jaxpr equation by equation, each checked; the first failure is re-raised naming its equation. */
function rerun(j: Jaxpr, args: ArrayImpl[], name: string): void {
  const env = new Map<Var, ArrayImpl>();
  j.invars.forEach((v, i) => env.set(v, args[i]));
  const read = (a: Atom): ArrayImpl => (a instanceof Literal ? a.value : env.get(a)!);
  withTrace(evalTrace, () => {
    j.eqns.forEach((e, k) => {
      let outs: ArrayImpl[];
      try {
        outs = executePrimitive(e.primitive, e.inputs.map(read), e.params);
      } catch (err) {
        // a nested jit already named its own equation
        if (err instanceof FloatingPointError && err.equation === undefined) {
          const where =
            e.site ??
            (err.site
              ? `${err.site} (the call of ${name}; its source lines are recorded when it is traced with debugNans/debugInfs on)`
              : undefined);
          throw new FloatingPointError(
            err.primitive,
            err.kind,
            jaxprEqnLine(j, k),
            where,
            `(found by re-running ${name} equation by equation)`,
          );
        }
        throw err;
      }
      e.outVars.forEach((v, i) => env.set(v, outs[i]));
    });
  });
}

const sync = (): void => setSpecialCheck(config.debugNans || config.debugInfs ? checked : null);
sync();
onConfigChange((name) => {
  if (name === "debugNans" || name === "debugInfs") sync();
});
