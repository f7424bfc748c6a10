import type { JSX } from 'preact';
import { navigate } from '../lib/router';
import type { WorkflowJob } from '../lib/types';

const NODE_W = 168;
const NODE_H = 48;
const GAP_X = 64;
const GAP_Y = 20;
const PAD = 12;

interface Placed {
  job: WorkflowJob;
  x: number;
  y: number;
}

/** Layer = length of the longest dependency path from a root; a cycle (which the server refuses) cannot loop here. */
function layers(jobs: WorkflowJob[]): WorkflowJob[][] {
  const byId = new Map(jobs.map((j) => [j.id, j]));
  const depth = new Map<string, number>();
  const visiting = new Set<string>();
  const depthOf = (job: WorkflowJob): number => {
    const known = depth.get(job.id);
    if (known !== undefined) return known;
    if (visiting.has(job.id)) return 0;
    visiting.add(job.id);
    const parents = job.depends_on.map((id) => byId.get(id)).filter((p): p is WorkflowJob => p !== undefined);
    const d = parents.length === 0 ? 0 : 1 + Math.max(...parents.map(depthOf));
    visiting.delete(job.id);
    depth.set(job.id, d);
    return d;
  };
  const out: WorkflowJob[][] = [];
  for (const job of jobs) (out[depthOf(job)] ??= []).push(job);
  return out.map((layer) => layer ?? []);
}

/** Places each layer in a column, ordering nodes by their parents' positions to keep edges short. */
function place(jobs: WorkflowJob[]): { nodes: Map<string, Placed>; width: number; height: number } {
  const nodes = new Map<string, Placed>();
  const columns = layers(jobs);
  let tallest = 0;
  columns.forEach((column, index) => {
    const order = column
      .map((job) => {
        const ys = job.depends_on.map((id) => nodes.get(id)?.y).filter((y): y is number => y !== undefined);
        return { job, key: ys.length ? ys.reduce((a, b) => a + b, 0) / ys.length : 0 };
      })
      .sort((a, b) => a.key - b.key || (a.job.key ?? '').localeCompare(b.job.key ?? ''));
    order.forEach(({ job }, row) => nodes.set(job.id, { job, x: PAD + index * (NODE_W + GAP_X), y: PAD + row * (NODE_H + GAP_Y) }));
    tallest = Math.max(tallest, column.length);
  });
  return {
    nodes,
    width: PAD * 2 + columns.length * NODE_W + Math.max(0, columns.length - 1) * GAP_X,
    height: PAD * 2 + tallest * NODE_H + Math.max(0, tallest - 1) * GAP_Y,
  };
}

/** What each on_parent_failure does, as the edge's tooltip and the legend say it. */
const POLICY_TEXT: Record<string, string> = {
  block: 'if it fails for good, this job waits (a retry that completes releases it)',
  cancel: 'if it fails for good, this job is cancelled',
  continue: 'if it fails for good, this job runs anyway',
};

/**
 * The workflow as a layered graph: one box per job, coloured by status, arrows
 * from dependency to dependent; an edge's on_parent_failure shows in its style
 * (dashed: continue, red: cancel) and tooltip.
 */
export function Dag({ jobs }: { jobs: WorkflowJob[] }): JSX.Element {
  const { nodes, width, height } = place(jobs);
  const edges: JSX.Element[] = [];
  const used = new Set<string>();
  for (const { job, x, y } of nodes.values()) {
    for (const parentId of job.depends_on) {
      const parent = nodes.get(parentId);
      if (!parent) continue;
      const policy = job.on_parent_failure?.[parentId] ?? 'block';
      used.add(policy);
      const x1 = parent.x + NODE_W;
      const y1 = parent.y + NODE_H / 2;
      const x2 = x;
      const y2 = y + NODE_H / 2;
      const mid = (x1 + x2) / 2;
      edges.push(
        <path key={`${parentId}-${job.id}`} class={`dag-edge dag-edge-${policy}`} data-policy={policy}
          d={`M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2 - 6},${y2}`} marker-end="url(#dag-arrow)">
          <title>{`${parent.job.key ?? parentId} → ${job.key ?? job.id}: on_parent_failure ${policy} (${POLICY_TEXT[policy] ?? policy})`}</title>
        </path>,
      );
    }
  }
  const legend = [...used].filter((policy) => policy !== 'block' || used.size > 1).sort();
  return (
    <div class="dag-wrap">
      {legend.length > 0 ? (
        <ul class="dag-legend" aria-label="When a dependency fails">
          {legend.map((policy) => <li key={policy} data-policy={policy}><span class={`dag-swatch dag-edge-${policy}`} /> {policy}: {POLICY_TEXT[policy] ?? policy}</li>)}
        </ul>
      ) : null}
      <svg class="dag" width={width} height={height} viewBox={`0 0 ${width} ${height}`} role="img" aria-label="Workflow graph">
        <defs>
          <marker id="dag-arrow" viewBox="0 0 10 10" refX="8" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M0,0 L10,5 L0,10 z" class="dag-arrow" />
          </marker>
        </defs>
        {edges}
        {[...nodes.values()].map(({ job, x, y }) => (
          <g key={job.id} class={`dag-node dag-${job.status}`} transform={`translate(${x},${y})`} data-key={job.key} data-status={job.status}
            tabIndex={0} role="link" aria-label={`${job.key}: ${job.status}`}
            onClick={() => navigate(`/jobs/${job.id}`)} onKeyDown={(e) => { if (e.key === 'Enter') navigate(`/jobs/${job.id}`); }}>
            <rect width={NODE_W} height={NODE_H} rx={8} />
            <text x={10} y={20} class="dag-key">{(job.key ?? job.id.slice(-8)).slice(0, 20)}</text>
            <text x={10} y={38} class="dag-status">{job.status}{job.attempt > 0 ? ` · retry ${job.attempt}` : ''}</text>
          </g>
        ))}
      </svg>
    </div>
  );
}
