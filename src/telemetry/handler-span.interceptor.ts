import { type CallHandler, type ExecutionContext, Injectable, type NestInterceptor } from '@nestjs/common';
import { SpanStatusCode, trace } from '@opentelemetry/api';
import { Observable } from 'rxjs';
import { SERVICE_NAME } from './tracing';

const tracer = trace.getTracer(SERVICE_NAME);

/**
 * A span around each Nest handler (`Controller.method`), child of the request's HTTP span, with the attributes
 * OpenTelemetry's NestJS instrumentation gives its handler spans (that instrumentation stops short of Nest 12).
 * The statements the handler makes are its children. Installed only when tracing is on.
 */
@Injectable()
export class HandlerSpanInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const controller = context.getClass().name;
    const callback = context.getHandler().name;
    return new Observable((subscriber) =>
      tracer.startActiveSpan(
        `${controller}.${callback}`,
        {
          attributes: { component: '@nestjs/core', 'nestjs.type': 'handler', 'nestjs.controller': controller, 'nestjs.callback': callback },
        },
        (span) => {
          const subscription = next.handle().subscribe({
            next: (value) => subscriber.next(value),
            error: (error: unknown) => {
              span.recordException(error instanceof Error ? error : String(error));
              span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
              span.end();
              subscriber.error(error);
            },
            complete: () => {
              span.end();
              subscriber.complete();
            },
          });
          return () => subscription.unsubscribe();
        },
      ),
    );
  }
}
