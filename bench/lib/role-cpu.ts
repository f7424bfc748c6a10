import { readdirSync, readFileSync } from 'node:fs';
import { processCpuSeconds } from './proc-cpu.js';

/** The processes of a Spool drain whose CPU a measurement splits. */
export type CpuRole = 'postgres' | 'server' | 'worker' | 'harness';
export const CPU_ROLES: readonly CpuRole[] = ['postgres', 'server', 'worker', 'harness'];

/** A process's parent, from /proc; null if it is gone. */
function parentOf(pid: string): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1] ?? null;
  } catch {
    return null;
  }
}

/**
 * CPU seconds per process with its role, for this process and its
 * descendants alive now: on a shared machine another run's PostgreSQL or
 * Spool server is not ours (an embedded cluster is a child of the harness
 * that started it).
 */
function cpuByPid(): Map<string, { role: CpuRole; cpu: number }> {
  const out = new Map<string, { role: CpuRole; cpu: number }>();
  const self = String(process.pid);
  const pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  const parent = new Map(pids.map((pid) => [pid, parentOf(pid)]));
  const ours = (pid: string) => {
    for (let at: string | null | undefined = pid, hops = 0; at && at !== '0' && hops < 64; at = parent.get(at), hops++) if (at === self) return true;
    return false;
  };
  for (const pid of pids) {
    if (!ours(pid)) continue;
    let cmd: string;
    let cpu: number;
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      cpu = processCpuSeconds(pid);
    } catch {
      continue;
    }
    const role: CpuRole | null = pid === self ? 'harness'
      : cmd.includes('postgres') && !cmd.includes('node') ? 'postgres'
      : /packages\/server\/(src\/main\.ts|dist\/main\.js)/.test(cmd) ? 'server'
      : /workers\/spool-[a-z-]*worker\.ts/.test(cmd) ? 'worker'
      : null;
    if (role) out.set(pid, { role, cpu });
  }
  return out;
}

/**
 * CPU seconds by role used while `run` runs, from /proc. Samples every
 * 100 ms: worker processes start and exit inside a drain, so a before/after
 * pair would miss them.
 */
export async function cpuDuring<T>(run: () => Promise<T>): Promise<{ result: T; cpu: Map<CpuRole, number> }> {
  const first = cpuByPid();
  const last = new Map(first);
  const sample = () => {
    for (const [pid, v] of cpuByPid()) last.set(pid, v);
  };
  const timer = setInterval(sample, 100);
  try {
    const result = await run();
    sample();
    const cpu = new Map<CpuRole, number>();
    for (const [pid, v] of last) cpu.set(v.role, (cpu.get(v.role) ?? 0) + v.cpu - (first.get(pid)?.cpu ?? 0));
    return { result, cpu };
  } finally {
    clearInterval(timer);
  }
}
