import { Logger } from '@nestjs/common';
import type { WeftLogger } from '../common/types.js';

/** The engine's logger on top of Nest's, so app-level logger settings apply. */
export function nestWeftLogger(context = 'Weft'): WeftLogger {
  const logger = new Logger(context);
  return {
    log: (m) => logger.log(m),
    warn: (m) => logger.warn(m),
    error: (m) => logger.error(m),
    debug: (m) => logger.debug(m),
  };
}
