// The framework's ceiling for `GET /api/resource`: a bare NestJS 12 app on @nestjs/platform-express with one
// controller answering {"message":"hello"}: no guard, pipe, interceptor, body parser or logger. Uses the project's
// own Nest packages (resolved from the repository's node_modules). Plain ESM, so decorators are applied by hand.
//
//   PORT=4200 node bench/peer/nest-hello-server.mjs
//
// Env:  PORT (default 4200). Binds 127.0.0.1 only.
//       HELLO_ADAPTER: a built module exporting the service's `ExpressHttpAdapter` (dist/src/common/express-adapter.js),
//       used instead of Nest's stock ExpressAdapter: the same framework with the service's HTTP server set-up.
// Prints one JSON line once listening: {"ready":true,"url":"http://127.0.0.1:<PORT>/api/resource","pid":...}
// SIGTERM/SIGINT: closes the app and exits 0.
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';

const HOST = '127.0.0.1';
const PORT = Number(process.env.PORT || 4200);

// @Controller('api') class HelloController { @Get('resource') resource() { return { message: 'hello' }; } }
class HelloController {
  resource() {
    return { message: 'hello' };
  }
}
Get('resource')(HelloController.prototype, 'resource', Object.getOwnPropertyDescriptor(HelloController.prototype, 'resource'));
Controller('api')(HelloController);

// @Module({ controllers: [HelloController] }) class HelloModule {}
class HelloModule {}
Module({ controllers: [HelloController] })(HelloModule);

const Adapter = process.env.HELLO_ADAPTER ? (await import(process.env.HELLO_ADAPTER)).default.ExpressHttpAdapter : ExpressAdapter;
const app = await NestFactory.create(HelloModule, new Adapter(), { logger: false, bodyParser: false });
await app.listen(PORT, HOST);
process.stdout.write(`${JSON.stringify({ ready: true, url: `http://${HOST}:${PORT}/api/resource`, pid: process.pid })}\n`);

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  // Do not hang on a connection that stays busy.
  setTimeout(() => process.exit(0), 2000).unref();
  app.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
