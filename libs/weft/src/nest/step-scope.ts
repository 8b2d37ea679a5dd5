// Step bodies are marked by the engine itself (engine/als.ts); re-exported for the decorators.
export { currentStep, insideStepBody } from '../engine/als.js';
