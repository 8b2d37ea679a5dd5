/** Splits a child's stdout into lines and hands each JSON line to `onEvent` (other lines are skipped). */
export function jsonLines(onEvent: (e: Record<string, unknown>) => void): (chunk: string) => void {
  let buf = '';
  return (chunk) => {
    buf += chunk;
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      let e: Record<string, unknown>;
      try {
        e = JSON.parse(line) as Record<string, unknown>;
      } catch {
        continue;
      }
      onEvent(e);
    }
  };
}
