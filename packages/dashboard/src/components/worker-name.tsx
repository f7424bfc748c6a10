import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api } from '../lib/api';
import type { Worker } from '../lib/types';
import { Link } from './ui';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** One lookup per worker id per tab: a job's history names the same worker many times. */
const hostnames = new Map<string, Promise<string | null>>();

function hostnameOf(id: string): Promise<string | null> {
  let known = hostnames.get(id);
  if (!known) {
    // Worker ids in jobs are free text; only a registered worker's UUID can be looked up.
    known = UUID.test(id) ? api<Worker>('GET', `/workers/${encodeURIComponent(id)}`).then((w) => w.hostname, () => null) : Promise.resolve(null);
    hostnames.set(id, known);
  }
  return known;
}

/** A link to the worker, shown as its hostname when it is a registered worker, else as the id the job carries. */
export function WorkerName({ id }: { id: string }): JSX.Element {
  const [hostname, setHostname] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    void hostnameOf(id).then((h) => live && setHostname(h));
    return () => {
      live = false;
    };
  }, [id]);
  return (
    <Link href={`/workers?id=${encodeURIComponent(id)}`} title={id} class={hostname ? undefined : 'mono'} data-worker-id={id}>
      {hostname ?? id}
    </Link>
  );
}
