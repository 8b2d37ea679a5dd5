import { ConsoleLogger } from '@nestjs/common';
import { startupErrorLine } from './startup-error.js';

/** Leaves the typed start-up errors to main.ts, which prints them as one line. */
export class StartupLogger extends ConsoleLogger {
  override error(message: unknown, ...rest: unknown[]): void {
    if (startupErrorLine(message) !== undefined) return;
    super.error(message, ...(rest as [string]));
  }
}
