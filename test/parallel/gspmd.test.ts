/**
 * @file jit with shardings beyond the table: sharding constraints and reshard, grad and vmap of jitted sharded
 * functions, resharding between functions, arguments carrying their shardings, a training step on a 2x2 mesh,
 * lower/compile text and costAnalysis, and errors.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { config } from "../../src/core/config.js";
config.update("numCpuDevices", 8);
import { type Array, devicePut, grad, jit, lax, makeMesh, nn, numpy as jnp, sharding, vmap } from "../../src/index.js";
import type { CostAnalysis } from "../../src/parallel/cost-model.js";
import { close, onEach, vals } from "./gspmd-cases.js";
const { P, NamedSharding, reshard } = sharding;

type Compiled = { costAnalysis: () => CostAnalysis; asText: () => string };
const kinds = (c: CostAnalysis) => c.collectives.map((k) => k.kind).sort();

onEach("withShardingConstraint inside jit reshards there; reshard outside jit is a devicePut", () => {
  const mesh = makeMesh([4], ["x"]);
  const S = (...e: (string | null)[]) => NamedSharding(mesh, P(...e));
  const f = (x: Array) => jnp.sum(lax.withShardingConstraint(jnp.multiply(x, 2), S(null, "x")), 1);
  const x = vals([8, 16]);
  const jf = jit(f, { inShardings: S("x") });
  close("value", jf(x), jit(f)(x));
  // the constraint moves the split from rows to columns (one all_to_all), the row sum then owes a psum
  assert.deepEqual(kinds((jf.lower(x).compile() as Compiled).costAnalysis()), ["all_to_all", "psum"]);
  // the same function unconstrained needs no communication
  assert.deepEqual(
    kinds(
      (
        jit((x: Array) => jnp.sum(jnp.multiply(x, 2), 1), { inShardings: S("x") })
          .lower(x)
          .compile() as Compiled
      ).costAnalysis(),
    ),
    [],
  );
  const y = reshard(x, S(null, "x"));
  assert.equal(String(y.sharding), String(S(null, "x")));
  close("reshard value", y, x, 0);
  const xs = devicePut(x, S());
  assert.equal(String(jit((a: Array) => reshard(jnp.sin(a), S("x")))(xs).sharding), String(S("x")));
});

onEach("a sharding constraint partitions a jit whose arguments are all unsharded (as JAX's)", () => {
  const mesh = makeMesh([4], ["x"]);
  const S = (...e: (string | null)[]) => NamedSharding(mesh, P(...e));
  const body = (x: Array) => jnp.sum(jnp.sin(jnp.multiply(x, 2)), 1);
  const f = (x: Array) => jnp.sum(jnp.sin(lax.withShardingConstraint(jnp.multiply(x, 2), S("x"))), 1);
  const x = vals([8, 16]);
  const jf = jit(f);
  const y = jf(x);
  close("value", y, body(x));
  // the rows are split where the constraint says, and the row sums stay split: no communication
  assert.equal(String(y.sharding), String(S("x")));
  const c = jf.lower(x).compile() as Compiled;
  assert.deepEqual(kinds(c.costAnalysis()), []);
  assert.match(c.asText(), /one device of Mesh\('x': 4\)/);
  // again from the trace cache, and with the constraint on the other dim: a psum of the partial row sums
  close("second call", jf(x), body(x));
  const g = jit((x: Array) => jnp.sum(jnp.sin(lax.withShardingConstraint(jnp.multiply(x, 2), S(null, "x"))), 1));
  close("column split", g(x), body(x));
  assert.deepEqual(kinds((g.lower(x).compile() as Compiled).costAnalysis()), ["psum"]);
  // a constraint over a one-device mesh leaves the ordinary jit alone
  const one = makeMesh([1], ["x"]);
  const h = jit((x: Array) => lax.withShardingConstraint(jnp.multiply(x, 2), NamedSharding(one, P("x"))));
  close("one device", h(x), jnp.multiply(x, 2));
});

onEach("grad and vmap of a jitted sharded function equal the unsharded ones", () => {
  const mesh = makeMesh([2, 2], ["x", "y"]);
  const S = (...e: (string | null)[]) => NamedSharding(mesh, P(...e));
  const loss = (w: Array, x: Array) => jnp.mean(jnp.square(jnp.tanh(jnp.matmul(x, w))));
  const w = vals([8, 4], 1),
    x = vals([16, 8], 2);
  const jl = jit(loss, { inShardings: [S(null, "y"), S("x")] });
  close("loss", jl(w, x), loss(w, x));
  close("grad", grad(jl)(w, x), grad(loss)(w, x));
  const xs = vals([3, 16, 8], 3);
  close("vmap", vmap((xi: Array) => jl(w, xi))(xs), vmap((xi: Array) => loss(w, xi))(xs));
});

onEach(
  "outputs carry their shardings; the next jit reshards them to its inShardings; carried shardings propagate",
  () => {
    const mesh = makeMesh([4], ["x"]);
    const S = (...e: (string | null)[]) => NamedSharding(mesh, P(...e));
    const x = vals([8, 16]);
    const f1 = jit((x: Array) => jnp.exp(x), { outShardings: S("x") });
    const y = f1(x);
    assert.equal(String(y.sharding), String(S("x")));
    const f2 = jit((y: Array) => jnp.multiply(y, 3), { inShardings: S(null, "x"), outShardings: S(null, "x") });
    const z = f2(y);
    assert.equal(String(z.sharding), String(S(null, "x")));
    close("chained", z, jnp.multiply(jnp.exp(x), 3));
    // no shardings given: the argument's own NamedSharding is the in sharding, and elementwise keeps it
    const xs = devicePut(x, S("x"));
    const w = jit((a: Array) => jnp.sin(a))(xs);
    assert.equal(String(w.sharding), String(S("x")));
    close("carried", w, jnp.sin(x));
    // a pytree prefix of outShardings: one sharding for both outputs
    const [a, b] = jit((a: Array) => [jnp.sin(a), jnp.cos(a)], { outShardings: S(null, "x") })(xs);
    assert.equal(String(a.sharding), String(S(null, "x")));
    assert.equal(String(b.sharding), String(S(null, "x")));
  },
);

onEach("a training step with plain jit + NamedSharding on a 2x2 mesh gives the one-device losses", () => {
  const mesh = makeMesh([2, 2], ["data", "model"]);
  const S = (...e: (string | null)[]) => NamedSharding(mesh, P(...e));
  type Params = { w1: Array; b1: Array; w2: Array; b2: Array };
  const loss = (p: Params, x: Array, y: Array) => {
    const h = nn.relu(jnp.add(jnp.matmul(x, p.w1), p.b1));
    const logits = jnp.add(jnp.matmul(h, p.w2), p.b2);
    return jnp.negative(jnp.mean(jnp.sum(jnp.multiply(nn.logSoftmax(logits, -1), y), -1)));
  };
  const step = (p: Params, x: Array, y: Array): [Params, Array] => {
    const g = grad(loss)(p, x, y);
    const q = {
      w1: jnp.subtract(p.w1, jnp.multiply(g.w1, 0.5)),
      b1: jnp.subtract(p.b1, jnp.multiply(g.b1, 0.5)),
      w2: jnp.subtract(p.w2, jnp.multiply(g.w2, 0.5)),
      b2: jnp.subtract(p.b2, jnp.multiply(g.b2, 0.5)),
    };
    return [q, loss(p, x, y)];
  };
  const pS = { w1: S(null, "model"), b1: S("model"), w2: S("model", null), b2: S() };
  const sharded = jit(step, { inShardings: [pS, S("data"), S("data")], outShardings: [pS, S()] });
  const single = jit(step);
  const p0: Params = { w1: vals([8, 16], 1), b1: vals([16], 2), w2: vals([16, 4], 3), b2: vals([4], 4) };
  const x = vals([16, 8], 5);
  const y = nn.oneHot(jnp.remainder(jnp.arange(16), 4), 4);
  let ps = p0,
    p1 = p0;
  for (let i = 0; i < 3; i++) {
    const [ns, ls] = sharded(ps, x, y);
    const [n1, l1] = single(p1, x, y);
    close(`loss at step ${i}`, ls, l1, 1e-5);
    assert.equal(String(ns.w1.sharding), String(pS.w1));
    ps = ns;
    p1 = n1;
  }
});

onEach("lower().compile() prints one device's program with its collectives; costAnalysis counts it", () => {
  const mesh = makeMesh([4], ["x"]);
  const S = (...e: (string | null)[]) => NamedSharding(mesh, P(...e));
  const f = jit((x: Array, w: Array) => jnp.matmul(x, w), { inShardings: [S(null, "x"), S("x")] });
  const x = vals([8, 16]),
    w = vals([16, 4], 1);
  const c = f.lower(x, w).compile() as Compiled & { call: (...a: unknown[]) => unknown };
  const text = c.asText();
  assert.match(text, /f32\[8,4\] PartitionSpec\(\)/);
  assert.match(text, /psum\[axes=\(x,\)/);
  assert.match(text, /psum axes=\(x\) bytes=128/);
  const cost = c.costAnalysis();
  // one device: an [8,4] block of x @ w over its 4 contracted columns is 2*8*4*4 flops, plus the psum's adds
  assert.equal(cost.flops, 2 * 8 * 4 * 4 + 8 * 4);
  assert.deepEqual(cost.collectives, [{ kind: "psum", axes: ["x"], bytes: 128 }]);
  // the inputs' blocks (8x4 and 4x4 floats) live with the dot's [8,4] result; they die before the psum's result
  assert.equal(cost.peakBytesPerDevice, (8 * 4 + 4 * 4 + 8 * 4) * 4);
  close("compiled call", c.call(x, w) as Array, jnp.matmul(x, w));
});

test("jit with shardings: errors name the function, the shardings and the shapes", () => {
  const m4 = makeMesh([4], ["x"]),
    m2 = makeMesh([2], ["x"]);
  const x = vals([8, 6]);
  assert.throws(
    () => jit((a: Array) => jnp.sin(a), { outShardings: NamedSharding(m4, P(null, "x")) })(x),
    /dimension 1 of size 6 is not divisible by 4/,
  );
  assert.throws(
    () =>
      jit((a: Array, b: Array) => jnp.add(a, b), { inShardings: [NamedSharding(m4, P("x")), NamedSharding(m2, P())] })(
        x,
        x,
      ),
    /jit\(.*\): inShardings leaf 1 is over Mesh\('x': 2\) but others are over Mesh\('x': 4\)/,
  );
  assert.throws(
    () => jit((a: Array) => a, { inShardings: [NamedSharding(m4, P()), NamedSharding(m4, P())] })(x),
    /inShardings/,
  );
});

onEach("eager ops on sharded arrays keep sensible shardings", () => {
  const mesh = makeMesh([4], ["x"]);
  const S = (...e: (string | null)[]) => NamedSharding(mesh, P(...e));
  const h = vals([8, 4]);
  const x = devicePut(h, S("x"));
  const y = jnp.add(jnp.multiply(x, 2), x);
  assert.equal(String(y.sharding), String(S("x")), "elementwise of same-sharded operands keeps the sharding");
  close("elementwise", y, jnp.multiply(h, 3));
  const r = jnp.sum(y, 1);
  assert.equal(String(r.sharding), String(S("x")), "a reduction over an unsharded dim keeps the others'");
  close("sum(1)", r, jnp.sum(jnp.multiply(h, 3), 1));
  const r0 = jnp.max(y, 0);
  assert.equal(String(r0.sharding), String(S()), "a reduction over the sharded dim is replicated");
  close("max(0)", r0, jnp.max(jnp.multiply(h, 3), 0));
  const w = vals([4, 3], 1);
  const m = jnp.matmul(x, w);
  assert.equal(String(m.sharding), String(S("x")));
  close("matmul", m, jnp.matmul(h, w));
  // others assemble on the host: the result is an ordinary (unsharded) array
  const c = jnp.cumsum(x, 0);
  assert.ok(!(c.sharding instanceof NamedSharding));
  close("cumsum", c, jnp.cumsum(h, 0));
});

onEach("a pending sum times an operand split over the sum's own axis is summed first", () => {
  const mesh = makeMesh([2, 2], ["x", "y"]);
  const S = (...e: (string | string[] | null)[]) => NamedSharding(mesh, P(...e));
  // sum(x, 0) over rows split on "x" is owed a psum over "x"; w is split over "x" too: the product needs the sum whole
  const body = (x: Array, w: Array) => jnp.multiply(w, jnp.sum(jnp.sin(x), 0));
  const x = vals([4, 8], 1),
    w = vals([8], 2);
  for (const [sx, sw] of [
    [S("x"), S("x")],
    [S("x"), S(["x", "y"])],
    [S(["x", "y"]), S("x")],
    [S("x", "y"), S("x")],
  ])
    close(`x ${sx.spec}, w ${sw.spec}`, jit(body, { inShardings: [sx, sw] })(x, w), body(x, w));
  // scaling by an operand replicated over the owed axis keeps the sum pending: one psum, after the product
  const f = jit(body, { inShardings: [S("x"), S("y")] });
  close("w split over y", f(x, w), body(x, w));
  assert.deepEqual(kinds((f.lower(x, w).compile() as Compiled).costAnalysis()), ["psum"]);
});
