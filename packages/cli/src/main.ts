/**
 * Entry point of `spool`: parses the command line, runs the command and
 * turns failures into one clear message (with a hint) and an exit code:
 * 0 ok, 1 the server refused or could not be reached, 2 bad usage.
 */
import { CommanderError, type Command } from 'commander';
import { explain, type GlobalOptions } from './context.js';
import { buildProgram } from './program.js';

const program = buildProgram();
const throwInsteadOfExit = (command: Command): void => {
  command.exitOverride();
  for (const sub of command.commands) throwInsteadOfExit(sub);
};
throwInsteadOfExit(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // Commander already printed the message (or the help / version).
    process.exitCode = err.exitCode === 0 ? 0 : 2;
  } else {
    const { message, hint, exitCode } = explain(err, program.opts<GlobalOptions>());
    process.stderr.write(`spool: ${message}\n`);
    if (hint) process.stderr.write(`hint: ${hint}\n`);
    process.exitCode = exitCode;
  }
}
