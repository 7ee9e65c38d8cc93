/** @file `jaxts train`: parses the flags, loads and validates the config, prepares the devices and runs the job. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type TrainConfig, ConfigError, configFromText, validateConfig } from "./config.js";
import { DEFAULT_CONFIG_YAML } from "./default-config.js";

export const TRAIN_USAGE = `usage: jaxts train [--config file.yaml] [--steps N] [--mesh DxT] [--out dir] [--resume dir] [--help]

Trains a small GPT on n-digit addition ("357+468=" -> "825") on a data x tensor mesh of CPU devices (one device
thread each), printing progress (step, loss, tokens/s, ETA), held-out exact-match accuracy and a few predictions,
and writes into the output directory: checkpoint.safetensors (params, optimizer state, step; written atomically),
loss.svg, metrics.json and trace/ (a profiler trace of a few steps: jaxts trace summary <dir>/trace).

  --config FILE   YAML or JSON config (default: the embedded configs/default.yaml: 2x2 mesh, 3-digit addition)
  --steps N       override run.steps
  --mesh DxT      override parallel_strategy data_parallel x tensor_parallel (uses D*T CPU devices)
  --out DIR       output directory (default: run.out, else runs/<timestamp>)
  --resume DIR    continue from the checkpoint in DIR (a run directory or a .safetensors file)
  --help          this text`;

/** Parsed command line of \`jaxts train\`. */
export interface TrainArgs {
  config: string | null;
  steps: number | null;
  mesh: [number, number] | null;
  out: string | null;
  resume: string | null;
  help: boolean;
}

const FLAGS = ["--config", "--steps", "--mesh", "--out", "--resume"];

/** Parses the flags of \`jaxts train\` (after the word train); errors name the flag and the expected form. */
export function parseTrainArgs(args: readonly string[]): TrainArgs {
  const a: TrainArgs = { config: null, steps: null, mesh: null, out: null, resume: null, help: false };
  for (let i = 0; i < args.length; i++) {
    let flag = args[i],
      value: string | undefined;
    if (flag === "--help" || flag === "-h") {
      a.help = true;
      continue;
    }
    const eq = flag.indexOf("=");
    if (flag.startsWith("--") && eq > 0) [flag, value] = [flag.slice(0, eq), flag.slice(eq + 1)];
    if (!FLAGS.includes(flag)) throw new ConfigError(`jaxts train: unknown argument '${args[i]}'\n${TRAIN_USAGE}`);
    value ??= args[++i];
    if (value === undefined || value === "") throw new ConfigError(`jaxts train: ${flag} needs a value`);
    if (flag === "--steps") {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1)
        throw new ConfigError(`jaxts train: --steps expects a positive integer, got '${value}'`);
      a.steps = n;
    } else if (flag === "--mesh") {
      const m = /^(\d+)x(\d+)$/.exec(value);
      if (!m || +m[1] < 1 || +m[2] < 1)
        throw new ConfigError(`jaxts train: --mesh expects DxT (data x tensor parallel, e.g. 2x2), got '${value}'`);
      a.mesh = [+m[1], +m[2]];
    } else a[flag.slice(2) as "config" | "out" | "resume"] = value;
  }
  return a;
}

/** The config a command line asks for: the file (or the embedded default) with the flags' overrides applied. */
export function configFromArgs(a: TrainArgs): TrainConfig {
  let text = DEFAULT_CONFIG_YAML,
    what = "the default config";
  if (a.config) {
    try {
      text = readFileSync(a.config, "utf8");
    } catch (e) {
      throw new ConfigError(`jaxts train: cannot read --config ${a.config}: ${(e as Error).message}`);
    }
    what = a.config;
  }
  const c = configFromText(text, what);
  if (a.steps !== null) c.run.steps = a.steps;
  if (a.mesh) [c.parallel_strategy.data_parallel, c.parallel_strategy.tensor_parallel] = a.mesh;
  return c;
}

const stamp = (): string => new Date().toISOString().replace(/[:.]/g, "-").replace("T", "_").slice(0, 19);

/** Runs \`jaxts train ...args\`; returns the exit code (2: bad arguments or config). */
export async function trainMain(
  args: readonly string[],
  err: (s: string) => void = (s) => process.stderr.write(s),
): Promise<number> {
  let a: TrainArgs, c: TrainConfig;
  try {
    a = parseTrainArgs(args);
    if (a.help) {
      process.stdout.write(`${TRAIN_USAGE}\n`);
      return 0;
    }
    c = configFromArgs(a);
  } catch (e) {
    err(`${(e as Error).message}\n`);
    return 2;
  }
  const ps = c.parallel_strategy;
  // the CPU device count: JAXTS_NUM_CPU_DEVICES when set (the config must then match it), else the config's product
  const env = process.env.JAXTS_NUM_CPU_DEVICES;
  const devices = env && !a.mesh ? Number(env) : ps.data_parallel * ps.tensor_parallel * ps.pipeline_stages;
  try {
    validateConfig(c, { devices });
  } catch (e) {
    err(`${(e as Error).message}\n`);
    return 2;
  }
  // the job module loads the library (and the native addon) only now, after the arguments are known to be good
  const job = await import("./job.js");
  try {
    job.prepareDevices(devices);
    const setup = job.setupJob(c, devices);
    const out = a.out ?? c.run.out ?? join("runs", stamp());
    job.runJob(c, setup, { out, resume: a.resume });
    return 0;
  } catch (e) {
    err(`${e instanceof ConfigError ? (e as Error).message : ((e as Error).stack ?? String(e))}\n`);
    return e instanceof ConfigError ? 2 : 1;
  }
}
