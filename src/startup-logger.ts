import { ConsoleLogger } from '@nestjs/common';
import { WeftError } from '@weft/nest';

/** Leaves Weft's typed start-up errors to main.ts, which prints them as one line. */
export class StartupLogger extends ConsoleLogger {
  override error(message: unknown, ...rest: unknown[]): void {
    if (message instanceof WeftError) return;
    super.error(message, ...(rest as [string]));
  }
}
