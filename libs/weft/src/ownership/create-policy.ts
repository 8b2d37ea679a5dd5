import { LeasePolicy } from './lease-policy.js';
import { NoOwnership } from './no-ownership.js';
import type { OwnershipPolicy, PolicyDependencies } from './policy.js';
import { WorkflowLeasePolicy } from './workflow-lease-policy.js';

/** The policy of the configured mode; the engine is built with it and never asks which it is. */
export function createOwnershipPolicy(deps: PolicyDependencies): OwnershipPolicy {
  switch (deps.config.mode) {
    case 'none':
      return new NoOwnership(deps);
    case 'lease':
      return new LeasePolicy(deps);
    case 'workflow-lease':
      return new WorkflowLeasePolicy(deps);
  }
}
