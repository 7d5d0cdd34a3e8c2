/**
 * How a "no" reads in a runtime's own terms (contract: "One rule for every runtime"): who
 * refused and their note; for a call still pending, its ref and that the same call again goes
 * on; for aye unreachable, a wrong token or any error, the reason. Never a token, never a
 * library's raw payload.
 */

import {
  ApprovalRefused, ApprovalTimedOut, ApprovalUnavailable, AyeError, StillPending,
} from './errors.js';
import { errorName } from './client.js';

/** The reason a runtime shows the model (and the log) for a call that may not run. */
export function whyNot(operation: string, error: unknown): string {
  if (error instanceof StillPending) {
    return `aye: ${error.message.replace(/^still_pending: /, '')}`;
  }
  if (error instanceof ApprovalRefused) {
    const note = error.note ? `: ${error.note}` : ' (no reason given)';
    const again = error.repeat
      ? ` (refused before; not asked again${error.until ? ` until ${error.until}` : ''})` : '';
    return `aye: ${operation} was refused by ${error.by ?? 'a person'}${note}${again}`;
  }
  if (error instanceof ApprovalTimedOut) {
    return `aye: nobody approved ${operation} in time`;
  }
  if (error instanceof ApprovalUnavailable) {
    return `aye: nobody who can approve ${operation} can be reached here`;
  }
  if (error instanceof AyeError) {
    return `aye: ${operation} was not allowed: ${error.message}`;
  }
  return `aye: ${operation} was not allowed: ${errorName(error)}`;
}

/** `ai.<tool name>`, `openai.<tool name>`, lowercased: a character an operation name does not
 * allow (anything but letters, digits, `_` and `-`) becomes `_`, as the Claude Code hook names
 * its operations. */
export function operationFor(prefix: string, toolName: string): string {
  return `${prefix}.${String(toolName).toLowerCase().replace(/[^a-z0-9_-]/g, '_') || '_'}`;
}
