// `node --import ./test/support/register-ts.js file.ts`: runs TypeScript sources (see ts-hooks.js).
import { register } from 'node:module';

register('./ts-hooks.js', import.meta.url);
