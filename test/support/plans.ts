// EXPLAIN (FORMAT JSON) plans, for the specs that check which indexes a hot statement reaches.

/** A node of a JSON plan, as far as the plan specs read it. */
export interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

/** Every node of a plan, the root first. */
export function planNodes(root: PlanNode): PlanNode[] {
  return [root, ...(root.Plans ?? []).flatMap(planNodes)];
}
