export { buildProgram, CLI_VERSION } from './program.js';
export { explain, UsageError } from './context.js';
