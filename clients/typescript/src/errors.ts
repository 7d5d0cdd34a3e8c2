/**
 * What the client throws: the same errors as the Python client (`aye_client`), so that an agent
 * reads a refusal the same way in either language. A timeout is never a yes: every error here
 * means "do not run".
 */

/** aye refused a request; `code` is the API's error code, `field` the part it names. */
export class AyeError extends Error {
  override name = 'AyeError';
  readonly status: number;
  readonly code: string;
  readonly field: string | undefined;
  /** A gated call's refusal or time-out: the approval's signed receipt (verifyReceipt). */
  receipt: string | undefined;

  constructor(status: number, code: string, message: string, field?: string) {
    super(`${code}: ${message}`);
    this.status = status;
    this.code = code;
    this.field = field;
    this.receipt = undefined;
  }
}

/** aye could not be reached (refused, cut, or no answer in time): a no, never a yes. */
export class AyeUnreachable extends AyeError {
  override name = 'AyeUnreachable';

  constructor(url: string, reason: string) {
    super(0, 'unreachable', `aye at ${url} could not be reached (${reason})`);
  }
}

/** The question expired or was withdrawn before anyone answered. */
export class AskClosed extends AyeError {
  override name = 'AskClosed';
}

/**
 * A person refused the call; `note` is the reason they gave, if any. `repeat` is true when aye
 * refused it at once, remembering an earlier refusal of this exact call; `until` is then when
 * that refusal is forgotten (as the server said it), if known.
 */
export class ApprovalRefused extends AyeError {
  override name = 'ApprovalRefused';
  readonly operation: string;
  readonly by: string | null;
  readonly note: string | null;
  readonly repeat: boolean;
  readonly until: string | null;

  constructor(operation: string, by: string | null, note: string | null = null,
              repeat = false, until: string | null = null) {
    const again = !repeat ? '' :
      until ? ` (remembered: not asked again until ${until})` : ' (remembered: not asked again)';
    super(403, 'approval_refused', `${operation} was refused by ${by}${again}`);
    this.operation = operation;
    this.by = by;
    this.note = note;
    this.repeat = repeat;
    this.until = until;
  }
}

/** Nobody approved the call before its approval's deadline. */
export class ApprovalTimedOut extends AyeError {
  override name = 'ApprovalTimedOut';
  readonly operation: string;

  constructor(operation: string) {
    super(403, 'approval_timed_out', `nobody approved ${operation} in time`);
    this.operation = operation;
  }
}

/** No responder of the gate can be reached for this work. */
export class ApprovalUnavailable extends AyeError {
  override name = 'ApprovalUnavailable';
  readonly operation: string;

  constructor(operation: string) {
    super(403, 'approval_unavailable', `nobody can approve ${operation} here`);
    this.operation = operation;
  }
}

/**
 * Not yet: the approval `ref` was still open when the wait ran out. The ask stays open; the same
 * call made again finds it (never a second one) and goes on once it is approved.
 */
export class StillPending extends AyeError {
  override name = 'StillPending';
  readonly ref: string;
  readonly operation: string;
  readonly ask: Record<string, unknown>;

  constructor(operation: string, ask: Record<string, unknown>) {
    const ref = String(ask['ref'] ?? ask['id']);
    super(409, 'still_pending', `waiting for approval ${ref} (${operation})${from(ask)}; ` +
      'make the same call again to go on');
    this.ref = ref;
    this.operation = operation;
    this.ask = ask;
  }
}

function from(ask: Record<string, unknown>): string {
  // The agent's view never says where an ask went; an operator's view does.
  const responders = ask['responders'];
  return Array.isArray(responders) && responders.length > 0 ? ` from ${responders.join(', ')}` : '';
}

/** Not a receipt aye signed with one of these keys (or one byte of it was changed). */
export class BadReceipt extends Error {
  override name = 'BadReceipt';
}

/** The body is not a callback signed with this secret: answer it 401 and use none of it. */
export class BadSignature extends Error {
  override name = 'BadSignature';
}
