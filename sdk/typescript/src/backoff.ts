// Waiting between retries: agentsdk/backoff.go.

/**
 * The wait in milliseconds before retry n (from 1): exponential from base,
 * capped at max, with "equal jitter" (half fixed, half random) so that many
 * agents cut off at once do not come back in step.
 */
export function backoffDelay(n: number, baseMs: number, maxMs: number): number {
  let d = baseMs;
  for (let i = 1; i < n && d < maxMs; i++) {
    d *= 2;
  }
  d = Math.min(d, maxMs);
  const half = d / 2;
  return half + Math.random() * half;
}

/** Waits ms milliseconds or until signal aborts, and reports whether the time passed. */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) {
    return Promise.resolve(false);
  }
  return new Promise((resolve) => {
    const done = (passed: boolean) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve(passed);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
