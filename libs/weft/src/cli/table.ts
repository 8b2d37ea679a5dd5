// Output of the `weft` CLI: aligned columns and key/value blocks, and the JSON of --json. Every
// cell and every JSON string is made terminal-safe first: workflow ids, names, payloads and error messages are user data, and a
// control character in them (an ANSI escape, a newline) must not move the cursor or fake rows.

/** Widest a cell is printed in a table; the rest is cut with an ellipsis (`--json` has it all). */
export const MAX_CELL = 60;

// What no output prints raw, table or JSON: C0, DEL and C1 controls (a C1 such as U+009B is a
// terminal escape of its own) and U+2028/U+2029, which editors and some terminals take as line
// breaks. JSON.stringify escapes C0 itself and must keep its own newlines, so it escapes the rest.
const BEYOND_C0 = '\\u007f-\\u009f\\u2028\\u2029';
const UNSAFE_TEXT = new RegExp(`[\\u0000-\\u001f${BEYOND_C0}]`, 'g');
const UNSAFE_IN_JSON = new RegExp(`[${BEYOND_C0}]`, 'g');

const escaped = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** Shows control characters as escapes (`\n`, `\u001b`, `\u009b`) instead of sending them to the terminal. */
export function safe(text: string): string {
  return text.replace(UNSAFE_TEXT, (c) => (c === '\n' ? '\\n' : c === '\t' ? '\\t' : escaped(c)));
}

/**
 * `value` as JSON text for stdout or stderr (every --json output): what safe() escapes is a
 * `\uXXXX` escape here too, which any JSON parser reads back as the same character. Outside
 * strings JSON text is ASCII, so only string contents change.
 */
export function jsonText(value: unknown, indent?: number): string {
  return (JSON.stringify(value, null, indent) ?? 'null').replace(UNSAFE_IN_JSON, escaped);
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
