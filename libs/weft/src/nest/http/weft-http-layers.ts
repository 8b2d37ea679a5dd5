// What happens to a request to a Weft path before and after Nest's routing, on Express: Weft reads
// its own JSON bodies (the limit follows maxPayloadBytes, whatever the app's body parser says), and
// what Express itself refuses under Weft's paths (a bad percent-encoding, no such route, a body the
// app's parser refused) gets the same typed body as every other refusal. docs/operations.md.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { InvalidArgumentError } from '../../common/errors.js';
import { WeftEngine } from '../../engine/engine.js';
import { RequestTooLargeError, RouteNotFoundError, UnsupportedMediaTypeError } from '../nest-errors.js';
import { WEFT_HTTP_ROUTES } from '../weft.constants.js';
import { toHttpError } from './http-errors.js';
import { bodyLimit, readJsonBody } from './json-body.js';
import { servedBases, underBases, type WeftController } from './weft-routes.js';

type Req = IncomingMessage & { body?: unknown; method?: string };
type Next = (err?: unknown) => void;
interface Layer {
  handle?: unknown;
  name?: string;
  route?: { path?: unknown };
}
interface ExpressApp {
  use(fn: (...args: never[]) => void): unknown;
  router?: { stack?: Layer[] };
}

/** body-parser's middleware names: Weft's reader goes before the first of them. */
const BODY_PARSERS = new Set(['jsonParser', 'urlencodedParser', 'textParser', 'rawParser']);

/** An error Express or a body parser gave for a request under a Weft path, as a typed one. */
export function typedRequestError(err: unknown): unknown {
  const e = err as { status?: unknown; statusCode?: unknown; type?: unknown } | null;
  const status = typeof e?.status === 'number' ? e.status : typeof e?.statusCode === 'number' ? e.statusCode : 500;
  if (status === 413) return new RequestTooLargeError(null);
  if (status === 415) return new UnsupportedMediaTypeError('the body could not be decoded');
  if (err instanceof URIError) return new InvalidArgumentError('path', 'is not valid percent-encoded UTF-8');
  if (status >= 400 && status < 500) return new InvalidArgumentError('request', 'could not be read (its path or its JSON body)');
  return err;
}

@Injectable()
export class WeftHttpLayers implements OnModuleInit {
  private readonly logger = new Logger('WeftHttp');

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly engine: WeftEngine,
    @Inject(WEFT_HTTP_ROUTES) private readonly controllers: WeftController[],
  ) {}

  /** Runs after Nest registered the routes and the app's body parsers, before its last handlers. */
  onModuleInit(): void {
    const adapter = this.adapterHost.httpAdapter;
    if (adapter?.getType() !== 'express') return; // another adapter: its own parsing and errors apply
    const app = adapter.getInstance<ExpressApp>();
    const stack = app.router?.stack;
    if (!Array.isArray(stack)) return;
    const paths = stack.flatMap((l) => (typeof l.route?.path === 'string' ? [l.route.path] : []));
    const bases = servedBases(paths, this.controllers);
    const limit = bodyLimit(this.engine.options.maxPayloadBytes);

    const reply = (res: ServerResponse, err: unknown) => {
      const { status, body, internal } = toHttpError(err);
      if (internal) this.logger.error((err as Error)?.stack ?? String(err));
      adapter.reply(res, body, status);
    };
    const weftBody = (req: Req, res: ServerResponse, next: Next) => {
      // Read already (a middleware of the app's before this one): the handler validates what it left.
      if (!underBases(req.url ?? '', bases.bodies) || req.complete || req.readableEnded) return next();
      readJsonBody(req, limit).then(
        (body) => {
          req.body = body; // read to the end: the app's body parsers skip it
          next();
        },
        (err: unknown) => reply(res, err),
      );
    };
    const weftNotFound = (req: Req, res: ServerResponse, next: Next) => {
      if (!underBases(req.url ?? '', bases.all)) return next();
      reply(res, new RouteNotFoundError(req.method ?? ''));
    };
    const weftErrors = (err: unknown, req: Req, res: ServerResponse, next: Next) => {
      if (res.headersSent || !underBases(req.url ?? '', bases.all)) return next(err);
      reply(res, typedRequestError(err));
    };

    app.use(weftBody);
    const layer = stack.splice(
      stack.findIndex((l) => l.handle === weftBody),
      1,
    )[0];
    const at = stack.findIndex((l) => BODY_PARSERS.has(String(l.name)) || l.route !== undefined);
    stack.splice(at === -1 ? stack.length : at, 0, layer);
    // After every route, before Nest's own not-found and error handlers.
    app.use(weftNotFound);
    app.use(weftErrors);
  }
}
