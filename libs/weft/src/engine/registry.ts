import { InvalidArgumentError, WorkflowTypeNotRegisteredError } from '../common/errors.js';
import type { WorkflowDefinition, WorkflowInstance } from '../common/types.js';
import { validateName } from './validation.js';

export type WorkflowClass = new (...args: never[]) => WorkflowInstance;

export class WorkflowRegistry {
  private readonly defs = new Map<string, WorkflowDefinition>();

  register(def: WorkflowDefinition): void {
    validateName('workflow name', def.name);
    if (typeof def.factory !== 'function') throw new InvalidArgumentError(`workflow "${def.name}"`, 'needs a factory function');
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
}
