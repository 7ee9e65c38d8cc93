/** @file Counting event-loop turns: how tests show that an await let the JS thread run instead of blocking it. */

/** Counts event-loop turns (setImmediate callbacks) until the returned function is called; it returns the count. */
export function countTurns(): () => number {
  let n = 0,
    on = true;
  const tick = () => {
    if (!on) return;
    n++;
    setImmediate(tick);
  };
  setImmediate(tick);
  return () => {
    on = false;
    return n;
  };
}
