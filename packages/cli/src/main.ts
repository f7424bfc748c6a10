/**
 * Entry point of `spool`: parses the command line, runs the command and
 * turns failures into one clear message (with a hint) and an exit code:
 * 0 ok, 1 the server refused or could not be reached, 2 bad usage.
 * With --json a failure is one JSON object on stderr instead, so scripts
 * never have to parse prose.
 */
import { CommanderError, type Command } from 'commander';
import { errorJson, explain, type GlobalOptions } from './context.js';
import { json } from './output.js';
import { buildProgram } from './program.js';

// Decided before parsing: a usage error can stop the parse before commander has read --json.
const jsonMode = process.argv.slice(2).includes('--json');

const program = buildProgram();
const throwInsteadOfExit = (command: Command): void => {
  command.exitOverride();
  // In --json mode commander's own error text is replaced by the JSON object below.
  if (jsonMode) command.configureOutput({ outputError: () => {}, writeErr: () => {} });
  for (const sub of command.commands) throwInsteadOfExit(sub);
};
throwInsteadOfExit(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // Commander already printed the message (or the help / version), unless --json silenced it.
    process.exitCode = err.exitCode === 0 ? 0 : 2;
    if (jsonMode && err.exitCode !== 0) {
      const message = err.message.replace(/^error: /, '');
      process.stderr.write(`${json({ code: 'USAGE_ERROR', message, details: { commander_code: err.code }, hint: 'run with --help for usage' })}\n`);
    }
  } else {
    const explained = explain(err, program.opts<GlobalOptions>());
    if (jsonMode) {
      process.stderr.write(`${JSON.stringify(errorJson(err, explained), null, 2)}\n`);
    } else {
      process.stderr.write(`spool: ${explained.message}\n`);
      if (explained.hint) process.stderr.write(`hint: ${explained.hint}\n`);
    }
    process.exitCode = explained.exitCode;
  }
}
