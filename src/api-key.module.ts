import { Global, Module } from '@nestjs/common';
import { ApiKey } from './api-key.js';
import { SignInController } from './sign-in.controller.js';

/** Global: ApiKeyGuard is created inside WeftModule (http.guards) and injects ApiKey from here. */
@Global()
@Module({ providers: [ApiKey], exports: [ApiKey], controllers: [SignInController] })
export class ApiKeyModule {}
