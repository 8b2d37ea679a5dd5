// Browser module `engines.js` of the dashboard: the engines, with the claims each holds and the
// age of its last renewal; the global lease under ownership 'lease'; this engine's own figures.
export const ENGINES_JS = String.raw`
import { h, time, duration, mono, table, empty, facts, syncClock } from './dom.js';
import { api } from './api.js';

function renewal(e, ttlMs) {
  if (e.lastRenewalAgeMs === undefined) return h('span', { class: 'muted' }, 'holds no claims');
  const late = ttlMs !== null && e.lastRenewalAgeMs > ttlMs;
  return h('span', { class: late ? 'error-text' : '' }, duration(e.lastRenewalAgeMs) + ' ago');
}

export const enginesView = {
  name: 'engines',
  title: 'Engines',
  match: (path) => (path === '/engines' ? {} : null),
  mount(root) {
    const mode = h('div', { id: 'engines-mode' });
    const list = h('div', { id: 'engines-list' });
    const self = h('div', { id: 'engines-self' });
    root.append(
      h('div', { class: 'toolbar' }, h('h1', null, 'Engines')),
      h('div', { class: 'cards' }, h('section', { class: 'card' }, h('h2', null, 'Ownership'), mode), h('section', { class: 'card' }, h('h2', null, 'This engine'), self)),
      h('section', { class: 'card wide' }, h('h2', null, 'Engines holding claims'), list),
    );
    return {
      async refresh() {
        const v = await api('/engines');
        syncClock(v.serverTime);
        mode.replaceChildren(facts([
          ['mode', v.mode],
          ['claim TTL', v.claimTtlMs === null ? null : duration(v.claimTtlMs)],
          v.mode === 'lease' ? ['lease holder', v.lease && v.lease.holder ? mono(v.lease.holder) : 'nobody'] : null,
          v.mode === 'lease' ? ['lease epoch', v.lease ? v.lease.epoch : null] : null,
          v.mode === 'lease' ? ['lease expires', v.lease && v.lease.expiresAt ? time(v.lease.expiresAt) : null] : null,
        ]));
        const s = v.self;
        self.replaceChildren(facts([
          ['id', mono(s.engineId)],
          ['state', s.halted ? 'halted (lease lost)' : s.bootstrapped ? 'running' : 'starting'],
          ['live workflows', s.liveWorkflows],
          ['claims held', s.claimsHeld],
          ['renewal failures', s.renewalFailures],
          ['last background pass', s.lastBackgroundPassAt ? time(s.lastBackgroundPassAt) : 'none yet'],
          ['pass interval', duration(s.backgroundIntervalMs)],
          ['background tasks', s.backgroundTasks],
        ]));
        if (v.engines.length === 0) return list.replaceChildren(empty('No engine holds claims.'));
        const rows = v.engines.map((e) =>
          h('tr', { dataset: { engine: e.engineId } },
            h('td', null, mono(e.engineId), e.self ? h('span', { class: 'muted' }, ' (this one)') : null),
            h('td', null, v.mode),
            h('td', { class: 'num' }, e.claims === undefined ? '' : e.claims),
            h('td', { class: 'num' }, e.expiredClaims ? h('span', { class: 'error-text' }, e.expiredClaims) : e.expiredClaims === undefined ? '' : 0),
            h('td', null, renewal(e, v.claimTtlMs)),
            h('td', null, e.latestExpiry ? time(e.latestExpiry) : '')));
        list.replaceChildren(table(['engine', 'mode', 'claims', 'expired', 'last renewal', 'latest expiry'], rows, { id: 'engines-table', class: 'grid' }));
      },
    };
  },
};
`;
