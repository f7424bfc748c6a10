import { readFileSync } from 'node:fs';

const TICK = 100; // USER_HZ on Linux

/** CPU seconds (user + system) a process has used so far, from /proc; throws if it is gone. */
export function processCpuSeconds(pid: number | string): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name, which is in parentheses and may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICK;
}
