// Plain-text output of the `weft` CLI: aligned columns and key/value blocks. Every cell is made
// terminal-safe first: workflow ids, names, payloads and error messages are user data, and a
// control character in them (an ANSI escape, a newline) must not move the cursor or fake rows.

/** Widest a cell is printed in a table; the rest is cut with an ellipsis (`--json` has it all). */
export const MAX_CELL = 60;

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/** Shows control characters as escapes (`\n`, `\u001b`) instead of sending them to the terminal. */
export function safe(text: string): string {
  return text.replace(CONTROL, (c) => (c === '\n' ? '\\n' : c === '\t' ? '\\t' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
}

export function cut(text: string, max = MAX_CELL): string {
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`;
}

/** A cell's text: dates as ISO, null and undefined as '-', objects as compact JSON. */
export function cell(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'string') return safe(value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch {
    json = undefined;
  }
  return safe(json ?? String(value));
}

const width = (s: string) => [...s].length;

/** Columns padded to their widest cell; `rows` are already strings or values for cell(). */
export function table(headers: string[], rows: unknown[][]): string {
  const text = rows.map((r) => headers.map((_, i) => cut(cell(r[i]))));
  const widths = headers.map((h, i) => Math.max(width(h), ...text.map((r) => width(r[i]))));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c + ' '.repeat(widths[i] - width(c))))
      .join('  ')
      .trimEnd();
  return [line(headers.map((h) => h.toUpperCase())), ...text.map(line)].join('\n') + '\n';
}

/** `key  value` lines, keys aligned; long values are cut at `max` characters. */
export function keyValues(pairs: Array<[string, unknown]>, max = 200): string {
  const w = Math.max(...pairs.map(([k]) => width(k)));
  return pairs.map(([k, v]) => `${k}${' '.repeat(w - width(k))}  ${cut(cell(v), max)}`).join('\n') + '\n';
}

/** A duration in ms as '850ms', '12.3s', '4m05s', '2h03m', '3d04h'. */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '-';
  const sign = ms < 0 ? '-' : '';
  const a = Math.abs(ms);
  if (a < 1000) return `${sign}${Math.round(a)}ms`;
  if (a < 60_000) return `${sign}${(a / 1000).toFixed(1)}s`;
  const s = Math.floor(a / 1000);
  const two = (n: number) => String(n).padStart(2, '0');
  if (s < 3600) return `${sign}${Math.floor(s / 60)}m${two(s % 60)}s`;
  if (s < 86_400) return `${sign}${Math.floor(s / 3600)}h${two(Math.floor(s / 60) % 60)}m`;
  return `${sign}${Math.floor(s / 86_400)}d${two(Math.floor(s / 3600) % 24)}h`;
}
