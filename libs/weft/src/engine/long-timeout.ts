/** Node's setTimeout fires after 1 ms for a delay above this (2^31 - 1 ms, about 24.8 days). */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1;

export interface LongTimeout {
  clear(): void;
}

/** setTimeout for any delay a Duration allows: waits past MAX_TIMEOUT_MS are chained. */
export function setLongTimeout(fn: () => void, ms: number): LongTimeout {
  let handle: NodeJS.Timeout;
  const arm = (left: number) => {
    handle = setTimeout(() => (left > MAX_TIMEOUT_MS ? arm(left - MAX_TIMEOUT_MS) : fn()), Math.min(left, MAX_TIMEOUT_MS));
  };
  arm(ms);
  return { clear: () => clearTimeout(handle) };
}
