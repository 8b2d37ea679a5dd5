// Browser module `kinds.js` of the dashboard: the operation kinds' labels, taken from the
// catalogue (common/operation-kinds.ts) when the package loads, so the timeline names a kind as
// `weft history` does and a new kind needs no change here.
import { OPERATION_KINDS } from '../../../common/operation-kinds.js';

const labels = Object.fromEntries(Object.entries(OPERATION_KINDS).map(([kind, spec]) => [kind, spec.label]));

export const KINDS_JS = `
const LABELS = ${JSON.stringify(labels)};

/** What a stored kind is shown as: its label, or the kind itself when this version does not know it. */
export const kindLabel = (kind) => (Object.hasOwn(LABELS, kind) ? LABELS[kind] : kind);
`;
