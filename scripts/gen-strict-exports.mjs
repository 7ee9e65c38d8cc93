/**
 * @file Generates src/**\/*-public.ts: each re-exports a namespace module and shadows its fixed-arity functions
 * (no options object, no rest parameter) with fixedArity wrappers that raise on extra arguments, so a call like
 * jnp.sin(x, { where }) fails loudly instead of dropping the options. Run: node scripts/gen-strict-exports.mjs
 * (`--check`: write nothing, exit 1 naming the files that differ from what would be generated; the suite runs it).
 */
import ts from "typescript";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const check = process.argv.includes("--check");
const stale = [];
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** [source module, public file, name prefix in messages] */
const TARGETS = [
  ["src/numpy/linalg.ts", "src/numpy/linalg-public.ts", "jnp.linalg"],
  ["src/numpy/fft.ts", "src/numpy/fft-public.ts", "jnp.fft"],
  ["src/numpy/index.ts", "src/numpy/public.ts", "jnp"],
  ["src/scipy/special.ts", "src/scipy/special-public.ts", "scipy.special"],
  ["src/scipy/stats-norm.ts", "src/scipy/stats-norm-public.ts", "scipy.stats.norm"],
  ["src/scipy/stats-expon.ts", "src/scipy/stats-expon-public.ts", "scipy.stats.expon"],
  ["src/scipy/stats-laplace.ts", "src/scipy/stats-laplace-public.ts", "scipy.stats.laplace"],
  ["src/scipy/stats-logistic.ts", "src/scipy/stats-logistic-public.ts", "scipy.stats.logistic"],
  ["src/scipy/stats-cauchy.ts", "src/scipy/stats-cauchy-public.ts", "scipy.stats.cauchy"],
  ["src/scipy/stats-uniform.ts", "src/scipy/stats-uniform-public.ts", "scipy.stats.uniform"],
  ["src/scipy/stats-pareto.ts", "src/scipy/stats-pareto-public.ts", "scipy.stats.pareto"],
  ["src/scipy/stats-t.ts", "src/scipy/stats-t-public.ts", "scipy.stats.t"],
  ["src/scipy/stats-beta.ts", "src/scipy/stats-beta-public.ts", "scipy.stats.beta"],
  ["src/scipy/stats-gamma.ts", "src/scipy/stats-gamma-public.ts", "scipy.stats.gamma"],
  ["src/scipy/stats-chi2.ts", "src/scipy/stats-chi2-public.ts", "scipy.stats.chi2"],
  ["src/scipy/stats-gennorm.ts", "src/scipy/stats-gennorm-public.ts", "scipy.stats.gennorm"],
  ["src/scipy/stats-vonmises.ts", "src/scipy/stats-vonmises-public.ts", "scipy.stats.vonmises"],
  ["src/scipy/stats-wrapcauchy.ts", "src/scipy/stats-wrapcauchy-public.ts", "scipy.stats.wrapcauchy"],
  ["src/scipy/stats-gumbel-r.ts", "src/scipy/stats-gumbel-r-public.ts", "scipy.stats.gumbelR"],
  ["src/scipy/stats-gumbel-l.ts", "src/scipy/stats-gumbel-l-public.ts", "scipy.stats.gumbelL"],
  ["src/scipy/stats-truncnorm.ts", "src/scipy/stats-truncnorm-public.ts", "scipy.stats.truncnorm"],
  [
    "src/scipy/stats-multivariate-normal.ts",
    "src/scipy/stats-multivariate-normal-public.ts",
    "scipy.stats.multivariateNormal",
  ],
  ["src/scipy/stats-dirichlet.ts", "src/scipy/stats-dirichlet-public.ts", "scipy.stats.dirichlet"],
  ["src/scipy/stats-bernoulli.ts", "src/scipy/stats-bernoulli-public.ts", "scipy.stats.bernoulli"],
  ["src/scipy/stats-binom.ts", "src/scipy/stats-binom-public.ts", "scipy.stats.binom"],
  ["src/scipy/stats-geom.ts", "src/scipy/stats-geom-public.ts", "scipy.stats.geom"],
  ["src/scipy/stats-poisson.ts", "src/scipy/stats-poisson-public.ts", "scipy.stats.poisson"],
  ["src/scipy/stats-nbinom.ts", "src/scipy/stats-nbinom-public.ts", "scipy.stats.nbinom"],
  ["src/scipy/stats-betabinom.ts", "src/scipy/stats-betabinom-public.ts", "scipy.stats.betabinom"],
  ["src/scipy/stats-multinomial.ts", "src/scipy/stats-multinomial-public.ts", "scipy.stats.multinomial"],
  ["src/nn/functions.ts", "src/nn/functions-public.ts", "nn"],
  ["src/nn/initializers.ts", "src/nn/initializers-public.ts", "nn.initializers"],
  ["src/random/index.ts", "src/random/public.ts", "random"],
  ["src/optim/index.ts", "src/optim/public.ts", "optim"],
  ["src/core/tree.ts", "src/core/tree-public.ts", "tree"],
];
const cfg = ts.getParsedCommandLineOfConfigFile(
  path.join(root, "tsconfig.json"),
  {},
  { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
);
const prog = ts.createProgram(cfg.fileNames, cfg.options);
const chk = prog.getTypeChecker();
for (const [src, dst, prefix] of TARGETS) {
  const sf = prog.getSourceFile(path.join(root, src));
  const rows = [];
  for (const e of chk.getExportsOfModule(chk.getSymbolAtLocation(sf))) {
    const s = e.flags & ts.SymbolFlags.Alias ? chk.getAliasedSymbol(e) : e;
    const d = s.valueDeclaration;
    if (!d) continue;
    const t = chk.getTypeOfSymbolAtLocation(s, d);
    const sigs = t.getCallSignatures();
    if (sigs.length !== 1 || t.getConstructSignatures().length) continue;
    const ps = sigs[0].parameters;
    const decls = ps.map((p) => p.valueDeclaration);
    if (
      ps.length === 0 ||
      decls.some((pd) => !pd || pd.dotDotDotToken) ||
      ps.some((p) => /opts|options|params/i.test(p.name))
    )
      continue;
    const names = ps.map((p, i) => p.name + (decls[i].questionToken || decls[i].initializer ? "?" : "")).join(", ");
    rows.push([e.name, ps.length, `${prefix}.${e.name}(${names})`]);
  }
  const mod = "./" + path.basename(src).replace(/\.ts$/, ".js");
  const rel = path.relative(path.dirname(path.join(root, dst)), path.join(root, "src/core/check-args.js"));
  const checkArgs = rel.startsWith(".") ? rel : `./${rel}`;
  let out = `/** @file Generated by scripts/gen-strict-exports.mjs (do not edit): ${prefix}'s public exports; fixed-arity functions raise on extra arguments. */\n`;
  out += `import { fixedArity } from "${checkArgs}";\nimport * as M from "${mod}";\nexport * from "${mod}";\n`;
  for (const [name, n, sig] of rows)
    out += `export const ${name}: typeof M.${name} = fixedArity("${prefix}.${name}", ${n}, M.${name}, "${sig}");\n`;
  if (check) {
    const cur = fs.existsSync(path.join(root, dst)) ? fs.readFileSync(path.join(root, dst), "utf8") : null;
    if (cur !== out) stale.push(dst);
    continue;
  }
  fs.writeFileSync(path.join(root, dst), out);
  console.log(`${dst}: ${rows.length} fixed-arity wrappers`);
}
if (stale.length) {
  console.error(
    `gen-strict-exports: ${stale.join(", ")} differ from what the exports generate; run node scripts/gen-strict-exports.mjs and commit`,
  );
  process.exit(1);
}
