// Browser module `schedules.js` of the dashboard: the schedules with their next fire times and
// last runs; pause, unpause and trigger.
export const SCHEDULES_JS = String.raw`
import { h, badge, time, duration, workflowLink, mono, table, empty } from './dom.js';
import { api, id as enc } from './api.js';

const PAGE = 200;

function spec(s) {
  if (s.cron) return [mono(s.cron), s.timezone ? h('span', { class: 'muted' }, ' ' + s.timezone) : null];
  return 'every ' + duration(s.everyMs);
}

function lastRun(s) {
  const r = s.recentRuns && s.recentRuns[0];
  if (!r) return h('span', { class: 'muted' }, 'never');
  return [time(r.fireAt), ' ', h('span', { class: 'muted' }, r.outcome), ' ', r.status ? workflowLink(r.workflowId) : null, r.status ? [' ', badge(r.status)] : null];
}

export const schedulesView = {
  name: 'schedules',
  title: 'Schedules',
  match: (path) => (path === '/schedules' ? {} : null),
  mount(root, _params, ui) {
    const list = h('div', { id: 'schedules-list' });
    root.append(h('div', { class: 'toolbar' }, h('h1', null, 'Schedules')), h('section', { class: 'card wide' }, list));
    const post = (s, what) => api('/schedules/' + enc(s.id) + '/' + what, { method: 'POST' });
    function buttons(s) {
      const toggle = h('button', { type: 'button', dataset: { action: s.paused ? 'unpause' : 'pause' } }, s.paused ? 'Unpause' : 'Pause');
      toggle.addEventListener('click', () => ui.action(toggle, () => post(s, s.paused ? 'unpause' : 'pause'), (s.paused ? 'Unpaused ' : 'Paused ') + s.id));
      const trigger = h('button', { type: 'button', dataset: { action: 'trigger' } }, 'Trigger now');
      trigger.addEventListener('click', () => ui.action(trigger, () => post(s, 'trigger'), (r) => 'Triggered ' + s.id + ': started ' + r.workflowId));
      return [toggle, ' ', trigger];
    }
    return {
      async refresh() {
        const all = await api('/schedules?limit=' + PAGE);
        if (all.length === 0) return list.replaceChildren(empty('No schedules. Declare one with @Schedule or POST /schedules.'));
        const rows = all.map((s) =>
          h('tr', { dataset: { schedule: s.id, paused: String(s.paused) } },
            h('td', { class: 'mono' }, s.id),
            h('td', null, s.workflowType),
            h('td', null, spec(s)),
            h('td', null, s.paused ? h('span', { class: 'badge s-suspended' }, 'paused') : h('span', { class: 'badge s-running' }, 'active')),
            h('td', null, s.nextFireTimes.length ? h('span', { title: s.nextFireTimes.join('\n') }, time(s.nextFireTimes[0])) : h('span', { class: 'muted' }, '\u2014')),
            h('td', null, lastRun(s)),
            h('td', null, s.overlap),
            h('td', { class: 'buttons' }, buttons(s))));
        const more = all.length === PAGE ? h('p', { class: 'muted' }, 'The first ' + PAGE + ' schedules by id.') : null;
        list.replaceChildren(...[table(['id', 'workflow', 'when', 'state', 'next fire', 'last run', 'overlap', ''], rows, { id: 'schedules-table', class: 'grid' }), more].filter(Boolean));
      },
    };
  },
};
`;
