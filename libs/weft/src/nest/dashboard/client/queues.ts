// Browser module `queues.js` of the dashboard: the declared queues with their limits, and how
// many workflows each holds enqueued and running (as of the answering engine's last admission pass).
export const QUEUES_JS = String.raw`
import { h, duration, mono, table, empty, syncClock } from './dom.js';
import { api } from './api.js';

function limit(n) {
  return n === null || n === undefined ? h('span', { class: 'muted' }, 'none') : String(n);
}

export const queuesView = {
  name: 'queues',
  title: 'Queues',
  match: (path) => (path === '/queues' ? {} : null),
  mount(root) {
    const list = h('div', { id: 'queues-list' });
    root.append(h('div', { class: 'toolbar' }, h('h1', null, 'Queues')), h('section', { class: 'card wide' }, list));
    return {
      async refresh() {
        const v = await api('/queues');
        syncClock(v.serverTime);
        if (v.queues.length === 0) return list.replaceChildren(empty('No queues. Declare them in the module options: queues: { payments: { concurrency: 10 } }.'));
        const rows = v.queues.map((q) =>
          h('tr', { dataset: { queue: q.name } },
            h('td', null, mono(q.name)),
            h('td', { class: 'num' }, String(q.enqueued)),
            h('td', { class: 'num' }, String(q.running)),
            h('td', { class: 'num' }, limit(q.concurrency)),
            h('td', { class: 'num' }, limit(q.perEngineConcurrency)),
            h('td', null, q.rateLimit ? q.rateLimit.limit + ' per ' + duration(q.rateLimit.periodMs) : h('span', { class: 'muted' }, 'none'))));
        list.replaceChildren(table(['queue', 'enqueued', 'running', 'concurrency', 'per engine', 'rate limit'], rows, { id: 'queues-table', class: 'grid' }));
      },
    };
  },
};
`;
