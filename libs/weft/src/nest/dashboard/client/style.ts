// The dashboard's stylesheet `style.css`: one light, readable operator page; status colours match
// the workflow statuses everywhere (badges, bars).
export const STYLE_CSS = String.raw`
:root {
  --bg: #f5f6f8; --card: #fff; --ink: #1d2330; --muted: #6b7385; --line: #e3e6ec; --accent: #3457d5;
  --running: #2563eb; --pending: #64748b; --suspended: #b45309; --completed: #15803d; --failed: #c62828;
  --cancelled: #475569; --timed-out: #c2410c; --enqueued: #7c3aed;
  --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, 'Liberation Mono', monospace;
  font: 14px/1.45 system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif;
  color: var(--ink); background: var(--bg);
}
* { box-sizing: border-box; }
body { margin: 0; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
h1 { font-size: 20px; margin: 0; font-weight: 600; display: flex; align-items: center; gap: 8px; min-width: 0; }
h1 .mono { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; font-size: 18px; }
h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .06em; color: var(--muted); margin: 0 0 10px; font-weight: 600; }
h3 { font-size: 13px; margin: 14px 0 6px; color: var(--muted); font-weight: 600; }
.top { display: flex; align-items: center; gap: 24px; padding: 0 24px; height: 52px; background: #161b2b; color: #d8dcea; }
.top .brand { color: #fff; font-weight: 700; font-size: 17px; letter-spacing: .02em; }
.top nav { display: flex; gap: 4px; }
.top nav a { color: #b8bfd6; padding: 6px 12px; border-radius: 6px; }
.top nav a:hover { background: #252c42; text-decoration: none; }
.top nav a.active { background: #2f3852; color: #fff; }
.live { margin-left: auto; display: flex; align-items: center; gap: 10px; font-size: 12px; color: #9aa3bd; max-width: 60%; }
.live #live-state { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.live .problem { color: #ff9d9d; }
.live button { color: #d8dcea; border-color: #3a4360; background: transparent; }
main { padding: 20px 24px 40px; max-width: 1400px; margin: 0 auto; }
.toolbar { display: flex; align-items: center; gap: 16px; margin-bottom: 16px; flex-wrap: wrap; }
.toolbar .back { font-size: 13px; }
.filters { display: flex; gap: 8px; margin-left: auto; flex-wrap: wrap; }
input, select, textarea, button { font: inherit; color: inherit; }
input, select, textarea { border: 1px solid var(--line); border-radius: 6px; padding: 6px 9px; background: #fff; }
input:focus, select:focus, textarea:focus { outline: 2px solid #c7d3fb; border-color: var(--accent); }
textarea { font-family: var(--mono); font-size: 12.5px; resize: vertical; width: 100%; }
button { border: 1px solid #cfd4de; background: #fff; border-radius: 6px; padding: 6px 12px; cursor: pointer; white-space: nowrap; }
button:hover:not(:disabled) { border-color: var(--accent); color: var(--accent); }
button:disabled { opacity: .45; cursor: default; }
button.danger { border-color: #efb8b8; color: var(--failed); }
button.danger[data-armed] { background: var(--failed); color: #fff; }
button.ghost { border-color: transparent; background: transparent; padding: 2px 8px; }
button[type=submit] { background: var(--accent); border-color: var(--accent); color: #fff; }
button[type=submit]:hover:not(:disabled) { color: #fff; filter: brightness(1.1); }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 16px; margin-bottom: 16px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px; }
.card.wide { margin-bottom: 16px; overflow-x: auto; }
.actions .row { display: flex; gap: 8px; flex-wrap: wrap; }
.actions .row input { flex: 1; min-width: 140px; }
.signal { display: grid; grid-template-columns: 1fr auto; gap: 8px; }
.signal textarea { grid-column: 1 / -1; grid-row: 2; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
table.grid { width: 100%; border-collapse: collapse; background: var(--card); }
.grid th { text-align: left; font-weight: 600; color: var(--muted); font-size: 12px; padding: 8px 10px; border-bottom: 1px solid var(--line); white-space: nowrap; }
.grid td { padding: 7px 10px; border-bottom: 1px solid #eef0f4; vertical-align: top; }
.grid tbody tr:hover { background: #f8f9fc; }
.grid td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.grid td.buttons { white-space: nowrap; text-align: right; }
#wf-list { background: var(--card); border: 1px solid var(--line); border-radius: 10px; overflow-x: auto; }
.mono { font-family: var(--mono); font-size: 12.5px; }
.small { font-size: 11.5px; }
.muted { color: var(--muted); }
.empty { color: var(--muted); margin: 8px 0; padding: 12px; text-align: center; }
.error-text { color: var(--failed); }
.inline-json { color: #394056; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 11.5px; font-weight: 600; color: #fff; background: var(--pending); white-space: nowrap; text-transform: lowercase; }
.s-running { background: var(--running); }
.s-pending { background: var(--pending); }
.s-enqueued { background: var(--enqueued); }
.s-suspended { background: var(--suspended); }
.s-completed { background: var(--completed); }
.s-failed, .s-expired { background: var(--failed); }
.s-cancelled { background: var(--cancelled); }
.s-timed_out { background: var(--timed-out); }
.s-answered { background: var(--completed); }
td.span { width: 22%; min-width: 140px; }
.track { position: relative; height: 10px; background: #eef1f7; border-radius: 5px; margin-top: 4px; }
.bar { position: absolute; top: 0; bottom: 0; border-radius: 5px; background: var(--running); min-width: 3px; }
.bar.failed { background: var(--failed); }
.bar.ok { background: var(--completed); }
.pager { display: flex; align-items: center; justify-content: flex-end; gap: 12px; margin-top: 12px; }
pre.json { font-family: var(--mono); font-size: 12px; background: #f6f7fb; border: 1px solid var(--line); border-radius: 6px; padding: 10px; margin: 6px 0 10px; max-height: 320px; overflow: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
details summary { cursor: pointer; padding: 4px 0; }
#flash { position: sticky; top: 0; z-index: 5; max-width: 1400px; margin: 0 auto; padding: 0 24px; }
.flash { display: flex; align-items: center; gap: 12px; margin-top: 12px; padding: 9px 12px; border-radius: 8px; border: 1px solid; }
.flash span { flex: 1; overflow-wrap: anywhere; }
.flash.ok { background: #ecfdf3; border-color: #a6e3bf; color: #14532d; }
.flash.error { background: #fff1f1; border-color: #f3b4b4; color: #8a1c1c; }
`;
