/** @file Type tests of shardMap and pmap: specs are PartitionSpec trees, mapped functions keep f's signature. */
import type { Array } from "../../src/core/array.js";
import * as ops from "../../src/primitives/ops.js";
import { makeMesh } from "../../src/parallel/mesh.js";
import { pmap } from "../../src/parallel/pmap.js";
import { type SpecTree, shardMap } from "../../src/parallel/shard-map.js";
import { P } from "../../src/parallel/sharding.js";
import { expectAssignable, expectType } from "./expect.js";

const mesh = makeMesh([1], ["i"]);
const f = (a: Array, p: { w: Array; b: Array[] }): Array => ops.add(a, p.w);
const sm = shardMap(f, { mesh, inSpecs: [P("i"), { w: P(), b: [P(null, "i")] }], outSpecs: P("i") });
expectType<(a: Array, p: { w: Array; b: Array[] }) => Array>()(sm);
shardMap(f, { mesh, inSpecs: [P("i"), null], outSpecs: () => P("i") }); // null: static; outSpecs may be a thunk
expectAssignable<SpecTree>([P(), { a: P("i"), b: [null, undefined] }]);
// @ts-expect-error inSpecs is a tree of PartitionSpecs, not a number
shardMap(f, { mesh, inSpecs: 42, outSpecs: P() });
// @ts-expect-error axis names are strings inside P(...), not bare strings
shardMap(f, { mesh, inSpecs: ["i", P()], outSpecs: P() });
// @ts-expect-error outSpecs is required
shardMap(f, { mesh, inSpecs: P() });

const pm = pmap(f, "i");
expectType<(a: Array, p: { w: Array; b: Array[] }) => Array>()(pm);
pmap(f, { axisName: "i", inAxes: [0, { w: 0, b: [null] }], outAxes: 0 });
// @ts-expect-error in_axes entries are integers or null
pmap(f, { inAxes: ["0"] });
