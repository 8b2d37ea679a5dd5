export * from './workflow.decorator';
export * from './handler.decorators';
export * from './step.decorator';
