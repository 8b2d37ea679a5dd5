import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { WeftEngine, WeftLifecycle } from '@weft/nest';
import { demoConfig, type DemoConfig } from '../config/demo.config.js';

export const CARRIER_POLLER_ID = 'carrier-poller';

/**
 * Makes sure the one carrier poller runs: every replica asks at start-up, the fixed id makes it
 * one workflow ('start-new-if-terminal' returns the running one, and starts it again only if an
 * operator cancelled it). Not awaited: bootstrap does not wait for the engine to be ready.
 */
@Injectable()
export class CarrierPollerStarter implements OnApplicationBootstrap {
  private readonly logger = new Logger('CarrierPoller');

  constructor(
    private readonly engine: WeftEngine,
    private readonly lifecycle: WeftLifecycle,
    @Inject(demoConfig.KEY) private readonly config: DemoConfig,
  ) {}

  onApplicationBootstrap(): void {
    void this.lifecycle
      .ready()
      .then((state) => {
        if (state !== 'ready') return;
        return this.engine.start(
          'carrier-poller',
          { cursor: 0, every: this.config.carrierPollEvery },
          { workflowId: CARRIER_POLLER_ID, idPolicy: 'start-new-if-terminal' },
        );
      })
      .catch((err: Error) => this.logger.warn(`Starting the carrier poller failed: ${err.message}`));
  }
}
