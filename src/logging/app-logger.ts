import { Inject, Injectable } from '@nestjs/common';
import { Logger, PARAMS_PROVIDER_TOKEN, type Params, PinoLogger } from 'nestjs-pino';

/** Nest's start-up inventory (each module initialised, each route mapped): detail for `LOG_LEVEL=debug`. */
const START_UP_DETAIL = new Set(['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication']);

/** The application's Nest logger: nestjs-pino's, extended as its documentation shows, with Nest's start-up lines at debug. */
@Injectable()
export class AppLogger extends Logger {
  constructor(logger: PinoLogger, @Inject(PARAMS_PROVIDER_TOKEN) params: Params) {
    super(logger, params);
  }

  override log(message: unknown, ...optionalParams: unknown[]): void {
    const context = optionalParams.at(-1);
    if (typeof context === 'string' && START_UP_DETAIL.has(context)) super.debug(message, ...optionalParams);
    else super.log(message, ...optionalParams);
  }
}
