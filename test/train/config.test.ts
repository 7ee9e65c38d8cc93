/** @file The training config: defaults, YAML/JSON parsing, None/null/~ in specs, and a table of rejected configs. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  ConfigError,
  DEFAULTS,
  type TrainConfig,
  configFromText,
  resolveConfig,
  validateConfig,
} from "../../src/train/config.js";
import { DEFAULT_CONFIG_YAML } from "../../src/train/default-config.js";
import { configFromArgs, parseTrainArgs } from "../../src/train/cli.js";

test("configs/default.yaml is the embedded default and validates on 4 devices as a 2x2 mesh", () => {
  assert.equal(readFileSync("configs/default.yaml", "utf8"), DEFAULT_CONFIG_YAML);
  const c = configFromText(DEFAULT_CONFIG_YAML);
  assert.deepEqual(
    [c.parallel_strategy.data_parallel, c.parallel_strategy.tensor_parallel, c.parallel_strategy.pipeline_stages],
    [2, 2, 1],
  );
  assert.deepEqual(c.sharding_spec.attention, [null, "model", null]);
  assert.equal(c.data.digits, 3);
  validateConfig(c, { devices: 4 });
});

test("configs/seed-8x8.yaml is the seed's hybrid example: 8 x 8 over 64 devices, data-sharded embeddings", () => {
  const c = configFromText(readFileSync("configs/seed-8x8.yaml", "utf8"));
  assert.equal(c.parallel_strategy.data_parallel, 8);
  assert.equal(c.parallel_strategy.tensor_parallel, 8);
  assert.deepEqual(c.sharding_spec.embeddings, ["data", null]);
  assert.deepEqual(c.sharding_spec.attention, ["data", "model", null]);
  validateConfig(c, { devices: 64 });
  assert.throws(() => validateConfig(c, { devices: 4 }), /= 64, but there are 4 devices/);
});

test("configs/zero3.yaml is ZeRO stage 3 on 4 devices (data_parallel 4) and validates there", () => {
  const c = configFromText(readFileSync("configs/zero3.yaml", "utf8"));
  assert.equal(c.parallel_strategy.zero_stage, 3);
  assert.equal(c.parallel_strategy.data_parallel, 4);
  assert.equal(c.parallel_strategy.tensor_parallel, 1);
  validateConfig(c, { devices: 4 });
});

test("configs/zero3-tp.yaml, pipeline-1f1b.yaml, pipeline-zero2.yaml, pipeline-zero3.yaml, pipeline-zero3-tp.yaml and seed-8x8-zero3.yaml are the combined engines and validate", () => {
  for (const [file, dp, tp, pp, zero, devices] of [
    ["zero3-tp", 2, 2, 1, 3, 4],
    ["pipeline-1f1b", 1, 2, 2, 0, 4],
    ["pipeline-zero2", 2, 1, 2, 2, 4],
    ["pipeline-zero3", 2, 1, 2, 3, 4],
    ["pipeline-zero3-tp", 2, 2, 2, 3, 8],
    ["seed-8x8-zero3", 8, 8, 1, 3, 64],
  ] as const) {
    const c = configFromText(readFileSync(`configs/${file}.yaml`, "utf8"));
    const ps = c.parallel_strategy;
    assert.deepEqual(
      [ps.data_parallel, ps.tensor_parallel, ps.pipeline_stages, ps.zero_stage],
      [dp, tp, pp, zero],
      file,
    );
    validateConfig(c, { devices });
  }
  assert.equal(configFromText(readFileSync("configs/pipeline-1f1b.yaml", "utf8")).parallel_strategy.schedule, "1f1b");
});

test("spec entries accept None, null and ~ (and JSON); omitted sections and keys take the defaults", () => {
  const y = configFromText(
    "sharding_spec:\n  embeddings: ['data', None]\n  attention: [~, 'model', null]\n  mlp: [None, model]\n",
  );
  assert.deepEqual(y.sharding_spec, {
    embeddings: ["data", null],
    attention: [null, "model", null],
    mlp: [null, "model"],
  });
  assert.deepEqual(y.model, DEFAULTS.model);
  const j = configFromText(JSON.stringify({ sharding_spec: { mlp: [null, "model"] }, run: { steps: 7 } }));
  assert.equal(j.run.steps, 7);
  assert.deepEqual(j.sharding_spec.embeddings, DEFAULTS.sharding_spec.embeddings);
  assert.deepEqual(resolveConfig({}), DEFAULTS);
});

/** A config from the default with some keys changed. */
function withKeys(changes: Record<string, unknown>): unknown {
  const c = structuredClone(DEFAULTS) as unknown as Record<string, Record<string, unknown>>;
  c.parallel_strategy.data_parallel = 2;
  c.parallel_strategy.tensor_parallel = 2;
  for (const [k, v] of Object.entries(changes)) {
    const [sec, key] = k.split(".");
    if (key === undefined) c[sec] = v as Record<string, unknown>;
    else (c[sec] ??= {})[key] = v;
  }
  return c;
}

const BAD: [string, Record<string, unknown>, number, RegExp][] = [
  [
    "product of parallel sizes != devices",
    { "parallel_strategy.data_parallel": 4 },
    4,
    /parallel_strategy: data_parallel \(4\) x tensor_parallel \(2\) x pipeline_stages \(1\) = 8, but there are 4 devices; make the product 4/,
  ],
  [
    "unknown mesh axis in a spec",
    { "sharding_spec.attention": [null, "modle", null] },
    4,
    /sharding_spec\.attention\[1\] names 'modle', which is not an axis of the mesh \('data', 'model'\); use one of them or None/,
  ],
  [
    "spec longer than the array's rank",
    { "sharding_spec.mlp": [null, "model", null] },
    4,
    /sharding_spec\.mlp has 3 entries but its array \(d_model, ff\) has rank 2; drop the extra entries/,
  ],
  [
    "heads not divisible by tensor_parallel",
    { "model.heads": 2, "parallel_strategy.tensor_parallel": 4, "parallel_strategy.data_parallel": 1 },
    4,
    /model\.heads \(2\) must be divisible by parallel_strategy\.tensor_parallel \(4\)/,
  ],
  [
    "ff not divisible by tensor_parallel",
    { "model.ff": 130, "parallel_strategy.tensor_parallel": 4, "parallel_strategy.data_parallel": 1 },
    4,
    /model\.ff \(130\) must be divisible by parallel_strategy\.tensor_parallel \(4\)/,
  ],
  [
    "batch not divisible by data_parallel",
    { "data.batch_size": 33 },
    4,
    /data\.batch_size \(33\) must be divisible by parallel_strategy\.data_parallel \(2\)/,
  ],
  [
    "d_model not divisible by heads",
    { "model.d_model": 66 },
    4,
    /model\.d_model \(66\) must be divisible by model\.heads \(4\)/,
  ],
  [
    "a data-sharded dimension that does not divide",
    {
      "sharding_spec.attention": ["data", "model", null],
      "parallel_strategy.data_parallel": 3,
      "parallel_strategy.tensor_parallel": 1,
      "data.batch_size": 48,
    },
    3,
    /sharding_spec\.attention\[0\] splits d_model \(64\) 3 ways, which does not divide evenly/,
  ],
  ["typo in a key", { "model.d_modle": 64 }, 4, /unknown key 'model\.d_modle' \(did you mean 'd_model'\?\)/],
  ["typo in a section", { optimiser: { lr: 1e-3 } }, 4, /unknown section 'optimiser' \(did you mean 'optimizer'\?\)/],
  [
    "the tensor axis on embeddings",
    { "sharding_spec.embeddings": ["model", null] },
    4,
    /sharding_spec\.embeddings\[0\] shards vocab over 'model'.*use 'data' or None there/,
  ],
  [
    "heads not over the tensor axis with tensor_parallel > 1",
    { "sharding_spec.attention": [null, null, null] },
    4,
    /sharding_spec\.attention\[1\] must be 'model' when tensor_parallel is 2/,
  ],
  ["an axis twice", { "sharding_spec.attention": ["data", "model", "data"] }, 4, /uses mesh axis 'data' twice/],
  ["zero_stage out of range", { "parallel_strategy.zero_stage": 4 }, 4, /zero_stage must be 0, 1, 2 or 3, got 4/],
  [
    "a 1F1B schedule without a pipeline",
    { "parallel_strategy.schedule": "1f1b" },
    4,
    /parallel_strategy\.schedule '1f1b' needs pipeline_stages > 1/,
  ],
  [
    "an unknown schedule",
    { "parallel_strategy.schedule": "interleaved" },
    4,
    /parallel_strategy\.schedule must be one of 'gpipe', '1f1b', got "interleaved"/,
  ],
  [
    "a string where a number belongs",
    { "optimizer.lr": "fast" },
    4,
    /optimizer\.lr must be a positive number, got "fast"/,
  ],
  [
    "an unknown remat policy",
    { "run.remat": "some" },
    4,
    /run\.remat must be one of 'none', 'everything', 'dots', 'dots_no_batch'/,
  ],
  [
    "an unknown task",
    { "data.task": "multiplication" },
    4,
    /data\.task must be one of 'addition', got "multiplication"/,
  ],
  ["a spec that is not a list", { "sharding_spec.mlp": "model" }, 4, /sharding_spec\.mlp must be a list/],
  ["a bad spec entry", { "sharding_spec.mlp": [null, 3] }, 4, /sharding_spec\.mlp\[1\] must be a mesh axis name/],
];

for (const [what, changes, devices, message] of BAD) {
  test(`a bad config is rejected before any work: ${what}`, () => {
    assert.throws(
      () => validateConfig(resolveConfig(withKeys(changes)), { devices }),
      (e: unknown) => {
        assert.ok(e instanceof ConfigError, `a ConfigError, got ${String(e)}`);
        assert.match((e as Error).message, /^config: /);
        assert.match((e as Error).message, message);
        return true;
      },
    );
  });
}

test("ZeRO x tensor parallel, pipeline x tensor parallel and 1F1B configs validate", () => {
  for (const changes of [
    { "parallel_strategy.zero_stage": 3 },
    { "parallel_strategy.zero_stage": 1, "parallel_strategy.data_parallel": 4, "parallel_strategy.tensor_parallel": 2 },
    { "parallel_strategy.pipeline_stages": 2, "parallel_strategy.data_parallel": 1 },
    {
      "parallel_strategy.pipeline_stages": 2,
      "parallel_strategy.schedule": "1f1b",
      "parallel_strategy.data_parallel": 1,
    },
  ]) {
    const c = resolveConfig(withKeys(changes));
    const ps = c.parallel_strategy;
    validateConfig(c, { devices: ps.data_parallel * ps.tensor_parallel * ps.pipeline_stages });
  }
});

test("invalid YAML names the file; a non-mapping is refused", () => {
  assert.throws(() => configFromText("model: [1, 2", "x.yaml"), /config: x\.yaml is not valid YAML\/JSON/);
  assert.throws(() => configFromText("- 1\n- 2\n", "x.yaml"), /x\.yaml must be a mapping of sections/);
  assert.throws(() => configFromText("model: 3\n"), /section 'model' must be a mapping of keys, got 3/);
});

test("command-line flags: --steps, --mesh and --out override the config; bad flags name the flag", () => {
  const a = parseTrainArgs(["--steps", "12", "--mesh=4x1", "--out", "o", "--resume", "r"]);
  assert.deepEqual(a, { config: null, steps: 12, mesh: [4, 1], out: "o", resume: "r", help: false });
  const c: TrainConfig = configFromArgs(a);
  assert.equal(c.run.steps, 12);
  assert.deepEqual([c.parallel_strategy.data_parallel, c.parallel_strategy.tensor_parallel], [4, 1]);
  assert.throws(
    () => parseTrainArgs(["--mesh", "2by2"]),
    /--mesh expects DxT \(data x tensor parallel, e\.g\. 2x2\), got '2by2'/,
  );
  assert.throws(() => parseTrainArgs(["--steps", "0"]), /--steps expects a positive integer, got '0'/);
  assert.throws(() => parseTrainArgs(["--stpes", "3"]), /unknown argument '--stpes'/);
  assert.throws(() => parseTrainArgs(["--out"]), /--out needs a value/);
  assert.equal(parseTrainArgs(["--help"]).help, true);
});
