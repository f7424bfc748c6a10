import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { errorMessage } from '../lib/api';

/** A modal built on <dialog>: focus trapping and Escape come from the browser. */
export function Modal({ title, onClose, children, wide }: { title: string; onClose: () => void; children: ComponentChildren; wide?: boolean }): JSX.Element {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
    return () => dialog?.close();
  }, []);
  return (
    <dialog ref={ref} class={wide ? 'modal modal-wide' : 'modal'} onCancel={(event) => { event.preventDefault(); onClose(); }} aria-label={title}>
      <header class="modal-header">
        <h2>{title}</h2>
        <button type="button" class="icon-button" aria-label="Close" onClick={onClose}>×</button>
      </header>
      <div class="modal-body">{children}</div>
    </dialog>
  );
}

interface ConfirmProps {
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  /** Runs the action; a rejection is shown in the dialog, success closes it. */
  onConfirm: () => Promise<unknown>;
  onClose: () => void;
}

/** "Are you sure?" with the action's own error shown in place. */
export function ConfirmDialog({ title, children, confirmLabel, danger, onConfirm, onClose }: ConfirmProps): JSX.Element {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const confirm = async () => {
    setBusy(true);
    setError(null);
    try {
      await onConfirm();
      onClose();
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  };
  return (
    <Modal title={title} onClose={onClose}>
      <div class="confirm-text">{children}</div>
      {error ? <p class="form-error" role="alert">{error}</p> : null}
      <div class="form-actions">
        <button type="button" onClick={onClose} disabled={busy}>Cancel</button>
        <button type="button" class={danger ? 'danger' : 'primary'} onClick={confirm} disabled={busy}>{busy ? 'Working…' : confirmLabel}</button>
      </div>
    </Modal>
  );
}
