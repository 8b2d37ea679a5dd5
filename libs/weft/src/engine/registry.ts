import { InvalidArgumentError, WorkflowTypeNotRegisteredError } from '../common/errors.js';
import type { WorkflowDefinition, WorkflowInstance } from '../common/types.js';
import { validateName } from './validation.js';

export type WorkflowClass = new (...args: never[]) => WorkflowInstance;

/** A version lands in a varchar(64) column and in every list row: a short printable label. */
function validateVersion(name: string, version: unknown): void {
  validateName(`version of workflow "${name}"`, version);
  if ((version as string).length > 64) throw new InvalidArgumentError(`version of workflow "${name}"`, 'must be at most 64 characters');
}

export class WorkflowRegistry {
  private readonly defs = new Map<string, WorkflowDefinition>();

  register(def: WorkflowDefinition): void {
    validateName('workflow name', def.name);
    if (typeof def.factory !== 'function') throw new InvalidArgumentError(`workflow "${def.name}"`, 'needs a factory function');
    if (def.version !== undefined) validateVersion(def.name, def.version);
    if (this.defs.has(def.name)) throw new InvalidArgumentError(`workflow "${def.name}"`, 'is already registered on this engine');
    this.defs.set(def.name, def);
  }

  get(name: string): WorkflowDefinition {
    const def = this.defs.get(name);
    if (!def) throw new WorkflowTypeNotRegisteredError(name);
    return def;
  }

  has(name: string): boolean {
    return this.defs.has(name);
  }

  names(): string[] {
    return [...this.defs.keys()];
  }

  all(): WorkflowDefinition[] {
    return [...this.defs.values()];
  }
}
