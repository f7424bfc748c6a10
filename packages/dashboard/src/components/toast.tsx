import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { errorMessage } from '../lib/api';

interface Toast {
  id: number;
  text: string;
  tone: 'ok' | 'bad';
}

let toasts: Toast[] = [];
let nextId = 1;
const listeners = new Set<() => void>();

function emit(): void {
  for (const listener of listeners) listener();
}

/** Shows a short message in the corner for a few seconds. */
export function notify(text: string, tone: 'ok' | 'bad' = 'ok'): void {
  const toast = { id: nextId++, text, tone };
  toasts = [...toasts, toast].slice(-4);
  emit();
  setTimeout(() => {
    toasts = toasts.filter((t) => t.id !== toast.id);
    emit();
  }, tone === 'bad' ? 8000 : 4000);
}

export function notifyError(prefix: string, err: unknown): void {
  notify(`${prefix}: ${errorMessage(err)}`, 'bad');
}

export function Toasts(): JSX.Element {
  const [, setVersion] = useState(0);
  useEffect(() => {
    const listener = () => setVersion((v) => v + 1);
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
    };
  }, []);
  return (
    <div class="toasts" aria-live="polite">
      {toasts.map((t) => (
        <div key={t.id} class={`toast toast-${t.tone}`} role={t.tone === 'bad' ? 'alert' : 'status'}>{t.text}</div>
      ))}
    </div>
  );
}
