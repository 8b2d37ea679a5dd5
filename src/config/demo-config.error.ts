/**
 * The environment holds values the demo refuses. Thrown while Nest builds the app, before anything
 * listens or connects; main.ts prints it as one line and exits 1.
 */
export class DemoConfigInvalidError extends Error {
  readonly code = 'DEMO_CONFIG_INVALID';

  constructor(readonly problems: string[]) {
    super(`The demo's environment is invalid: ${problems.join('; ')}. Fix or unset these variables (README, "The demo's configuration").`);
    this.name = 'DemoConfigInvalidError';
  }
}
