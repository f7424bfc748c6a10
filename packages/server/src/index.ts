export * from './embedded-postgres.js';
export * from './config.js';
export * from './runtime.js';
export * from './app.js';
export * from './dashboard-assets.js';
export * from './metrics/spool-metrics.js';
export { OPERATIONS, authorize, type Operation } from './authorization.js';
