import { BadRequestException, ValidationError, ValidationPipe } from '@nestjs/common';

/** A request body the demo refuses: 400 with the same `{ statusCode, code, message }` body as Weft's errors. */
export class InvalidRequestError extends BadRequestException {
  readonly code = 'DEMO_INVALID_REQUEST';

  constructor(readonly problems: string[]) {
    super({ statusCode: 400, code: 'DEMO_INVALID_REQUEST', message: `Invalid request body: ${problems.join('; ')}.` });
  }
}

/**
 * Nest's ValidationPipe as the demo's controllers use it: a body becomes its DTO class, a field
 * the DTO does not declare is refused, and the refusal is an InvalidRequestError listing every
 * broken rule (Nest's flattening and its cap on the messages' length). Scoped to the demo's
 * controllers rather than global, so it never reaches Weft's own routes.
 */
export class RequestValidationPipe extends ValidationPipe {
  constructor() {
    super({
      transform: true,
      whitelist: true,
      forbidNonWhitelisted: true,
      // One message per field: the first rule it breaks (the rules run from the property upwards).
      stopAtFirstError: true,
      validationError: { target: false, value: false },
      maxErrorMessagesLength: 2_000,
    });
  }

  override createExceptionFactory(): (errors?: ValidationError[]) => InvalidRequestError {
    const nests = super.createExceptionFactory();
    return (errors) => {
      const refused = nests(errors) as BadRequestException;
      const { message } = refused.getResponse() as { message: string[] };
      return new InvalidRequestError(message);
    };
  }
}
