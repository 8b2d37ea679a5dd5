import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { WeftError } from '@weft/nest';
import { AppModule } from './app.module.js';
import { StartupLogger } from './startup-logger.js';

async function bootstrap(): Promise<void> {
  const logger = new Logger('Main');
  const app = await NestFactory.create(AppModule, { abortOnError: false, logger: new StartupLogger() });
  app.enableShutdownHooks();
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port, process.env.HOST ?? '127.0.0.1');
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
  // WeftModule's start-up errors already start with their code.
  const typed = err instanceof WeftError && (err.message.startsWith(`${err.code}: `) ? err.message : `${err.code}: ${err.message}`);
  const line = typed || `Start-up failed: ${(err as Error)?.stack ?? String(err)}`;
  process.stderr.write(`${line}\n`);
  process.exit(1);
});
