import { Injectable } from '@nestjs/common';
import { Step } from '@weft/nest';

/** An ordinary provider. Called from a workflow, `compose` is a durable step: recorded once, replayed after. */
@Injectable()
export class GreetingService {
  @Step()
  async compose(name: string): Promise<string> {
    return `Hello, ${name}!`;
  }
}
