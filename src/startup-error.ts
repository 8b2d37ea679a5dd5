import { WeftError } from '@weft/nest';
import { DemoConfigInvalidError } from './config/demo-config.error.js';

/**
 * The one line main.ts prints, with no stack trace, for the start-up errors a person acts on by
 * changing the configuration: Weft's typed errors (most already start with their code) and the
 * demo's refused environment. Undefined for anything else.
 */
export function startupErrorLine(err: unknown): string | undefined {
  if (!(err instanceof WeftError || err instanceof DemoConfigInvalidError)) return undefined;
  return err.message.startsWith(`${err.code}: `) ? err.message : `${err.code}: ${err.message}`;
}
