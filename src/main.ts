import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { DemoConfig, demoConfig } from './config/demo.config.js';
import { startupErrorLine } from './startup-error.js';
import { StartupLogger } from './startup-logger.js';

async function bootstrap(): Promise<void> {
  const logger = new Logger('Main');
  const app = await NestFactory.create(AppModule, { abortOnError: false, logger: new StartupLogger() });
  app.enableShutdownHooks();
  const { port, host } = app.get<DemoConfig>(demoConfig.KEY).http;
  await app.listen(port, host);
  const url = (await app.getUrl()).replace('[::1]', 'localhost');
  logger.log(`Weft demo listening on ${url}`);
  logger.log(
    `Try: curl -XPOST ${url}/orders -H 'content-type: application/json' -d '{"items":[{"sku":"tea","quantity":2}],"amount":1250,"address":"1 Main St"}'`,
  );
  logger.log(`Then GET ${url}/orders/<orderId>; also ${url}/health, ${url}/metrics, ${url}/weft/workflows`);
  logger.log(`Dashboard: ${url}/weft (sign the browser in once with ${url}/weft/sign-in?key=<WEFT_API_KEY>)`);
}

bootstrap().catch((err: unknown) => {
  // One line a human can act on; no stack trace loop for configuration problems.
  const line = startupErrorLine(err) ?? `Start-up failed: ${(err as Error)?.stack ?? String(err)}`;
  process.stderr.write(`${line}\n`);
  process.exit(1);
});
