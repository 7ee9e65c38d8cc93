/** @file withEnv: runs a test body with an environment variable set (or unset), restoring its previous value after. */

/** f with process.env[name] = value (deleted when value is undefined); the previous value comes back afterwards. */
export function withEnv<T>(name: string, value: string | undefined, f: () => T): T {
  const saved = process.env[name];
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
  try {
    return f();
  } finally {
    if (saved === undefined) delete process.env[name];
    else process.env[name] = saved;
  }
}
