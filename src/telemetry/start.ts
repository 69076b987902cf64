import { startTracing } from './tracing';

// Imported first by main.ts, for its side effect: the SDK starts before the application's imports run.
startTracing(process.env);
