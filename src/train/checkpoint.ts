/**
 * @file The training job's checkpoints: params, optimizer state, step and loss history in one safetensors file,
 * written atomically (io.save: temp file, fsync, rename), loaded against a template and placed on the current mesh.
 */
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { type Array } from "../core/array.js";
import * as jnp from "../numpy/index.js";
import { load, save } from "../io/checkpoint.js";
import type { Mesh } from "../parallel/mesh.js";
import { NamedSharding, PartitionSpecImpl } from "../parallel/sharding.js";
import { devicePut } from "../parallel/device-put.js";
import type { SpecTree } from "../parallel/shard-map.js";

/** File name of the checkpoint inside a run directory. */
export const CHECKPOINT_FILE = "checkpoint.safetensors";

/** What a checkpoint holds. */
export interface TrainState<P, S> {
  params: P;
  optState: S;
  /** Steps completed. */
  step: number;
  /** Loss of every completed step (index i = step i + 1). */
  losses: number[];
  /** The ZeRO stage of the run that wrote the file (its optimizer state is always in the parameters' shapes). */
  zeroStage?: number;
}

/** The checkpoint path for a run directory or a checkpoint file path. */
export function checkpointPath(dirOrFile: string): string {
  return existsSync(dirOrFile) && statSync(dirOrFile).isDirectory() ? join(dirOrFile, CHECKPOINT_FILE) : dirOrFile;
}

/** Writes the state atomically to `<dir>/checkpoint.safetensors` (a killed write leaves the previous file intact). */
export function saveTrainState<P, S>(dir: string, s: TrainState<P, S>): string {
  const path = join(dir, CHECKPOINT_FILE);
  save(path, {
    params: s.params,
    opt_state: s.optState,
    step: s.step,
    losses: jnp.array(s.losses.length ? s.losses : [Number.NaN], { dtype: "float32" }),
    num_losses: s.losses.length,
    zero_stage: s.zeroStage ?? 0,
    opt_layout: 1, // 1: optimizer state in the parameters' shapes (loads at any ZeRO stage and mesh)
  });
  return path;
}

/**
 * Loads a checkpoint written by saveTrainState; params and optimizer state are checked against the templates
 * (shapes and dtypes; a config mismatch names the tensor). The loss history's length is read from the file.
 */
export function loadTrainState<P, S>(dirOrFile: string, params: P, optState: S): TrainState<P, S> {
  const path = checkpointPath(dirOrFile);
  if (!existsSync(path))
    throw new Error(
      `train: no checkpoint at ${JSON.stringify(path)} (expected a run directory holding ${CHECKPOINT_FILE})`,
    );
  const head = load(path) as { num_losses: number; losses: Array; zero_stage?: number; opt_layout?: number };
  const n = head.num_losses;
  const saved = head.zero_stage ?? 0;
  if (saved !== 0 && head.opt_layout === undefined)
    throw new Error(
      `train: the checkpoint in ${dirOrFile} was written at parallel_strategy.zero_stage ${saved} by an older jaxts, ` +
        `which stored the optimizer state in that stage's flat layout; resume it with zero_stage: ${saved} on the same mesh under that version, or start afresh`,
    );
  const raw = load(path, {
    params,
    opt_state: optState,
    step: 0,
    losses: jnp.zeros([Math.max(n, 1)], { dtype: "float32" }),
    num_losses: 0,
    ...(head.zero_stage === undefined ? {} : { zero_stage: 0 }),
    ...(head.opt_layout === undefined ? {} : { opt_layout: 0 }),
  } as unknown) as { params: P; opt_state: S; step: number; losses: Array };
  const losses = (raw.losses.tolist() as number[]).slice(0, n);
  return { params: raw.params, optState: raw.opt_state, step: raw.step, losses, zeroStage: saved };
}

/**
 * Places every leaf of `tree` on `mesh` with the PartitionSpec at the same place in `specs` (loading a checkpoint
 * onto a different mesh reshards it: each device gets its block of the new layout).
 */
export function placeOnMesh<T>(tree: T, specs: SpecTree, mesh: Mesh): T {
  const rec = (x: unknown, s: unknown): unknown =>
    s instanceof PartitionSpecImpl
      ? devicePut(x as Array, new NamedSharding(mesh, s))
      : Object.fromEntries(
          Object.entries(x as object).map(([k, v]) => [
            k,
            v === undefined ? v : rec(v, (s as Record<string, unknown>)[k]),
          ]),
        );
  return rec(tree, specs) as T;
}
