import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { WeftHealthIndicator } from '@weft/nest';

@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly weft: WeftHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([
      () => this.weft.pingCheck('database'),
      () => this.weft.isHealthy('weft'),
    ]);
  }
}
