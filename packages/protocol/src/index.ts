export * from './job-status.js';
export * from './errors.js';
export * from './limits.js';
export * from './realtime-events.js';
export * from './roles.js';
export * from './trace-context.js';
