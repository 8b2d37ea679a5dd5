export * from './workflow.decorator.js';
export * from './handler.decorators.js';
export * from './step.decorator.js';
export * from './schedule.decorator.js';
