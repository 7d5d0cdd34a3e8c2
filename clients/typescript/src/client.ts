/**
 * `connect({url, token})`: ask a person and wait, or run an operation only once a person
 * approved this exact call, over aye's HTTP API with the platform's fetch (Node 20+, Deno, Bun,
 * browsers). The same promises as the Python client: a timeout is never a yes, a refusal is
 * remembered by aye, and `gated()` tells aye afterwards what ran.
 */

import {
  ApprovalRefused, ApprovalTimedOut, ApprovalUnavailable, AskClosed, AyeError, AyeUnreachable,
  StillPending,
} from './errors.js';

/** An ask as the agent sees it (contract: "The ask as an agent sees it"). */
export type Ask = {
  id: string;
  ref: string;
  kind: string;
  status: 'open' | 'answered' | 'expired' | 'withdrawn';
  question: string;
  answer: { value: unknown; option: number | null; note: string | null } | null;
  outcome?: 'approved' | 'approval_refused' | 'approval_timed_out';
  by?: string | null;
  receipt?: string;
  [field: string]: unknown;
};

/** The body of POST /v1/asks: `question` and any other field the contract lists. */
export type AskBody = { question: string; [field: string]: unknown };

/** A call that may run: its approval's id and signed receipt, both absent when not gated. */
export type Allowed = { decision: 'allow'; approval?: string; receipt?: string };

export type WaitOptions = {
  /** How long to wait, in seconds; absent: until the ask closes. */
  waitS?: number;
};

export type CallOptions = {
  /** The work the call belongs to (`{github: {...}}` or `{slack: {...}}`). */
  work?: unknown;
  /** How long to wait for a person, in seconds; then StillPending (the ask stays open). */
  waitS?: number;
  /** The caller's own bound on the approval (`timeout_s`): its deadline is no later. */
  timeoutS?: number;
  /** Where aye also POSTs the approval when it closes. */
  callbackUrl?: string;
};

export type ConnectOptions = {
  url: string;
  token: string;
  /** A fetch of your own (a proxy's, a test's); default the platform's. */
  fetch?: typeof fetch;
};

/** One wait request; the client keeps waiting across as many as it takes. */
const WAIT_SLICE_S = 60;
/** While aye restarts (a refused connection, 502/503/504): try again, growing the pause. */
const RETRY_FIRST_MS = 200;
const RETRY_MAX_MS = 5000;
const RETRY_STATUSES = new Set([502, 503, 504]);
/** Without a wait to bound them, retries stop after this. */
const RETRY_WITHOUT_BOUND_S = 300;
/** A request gets this long beyond the wait it asks the server for. */
const REQUEST_GRACE_S = 30;
const REPORT_TIMEOUT_S = 10;
const DETAIL_MAX = 500;

type Reply = { status: number; body: Record<string, unknown> };

export class AyeClient {
  readonly url: string;
  readonly #token: string;
  readonly #fetch: typeof fetch;

  constructor(options: ConnectOptions) {
    if (!options || typeof options.url !== 'string' || typeof options.token !== 'string' ||
        !options.token) {
      throw new TypeError('connect({url, token}) needs aye\'s URL and an agent\'s token');
    }
    this.url = options.url.replace(/\/+$/, '');
    this.#token = options.token;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** POST /v1/asks, then wait: the ask, answered, or still open after `waitS`. A `key` is
   * sent (one is made when none is given), so a create retried across a restart asks once. */
  async ask(body: AskBody, options: WaitOptions = {}): Promise<Ask> {
    const made = await this.#request('POST', '/v1/asks', { key: randomKey(), ...body });
    return this.wait(String(made.body['id']), options);
  }

  /** Park until the ask closes, or `waitS` seconds pass (then it comes back still open). */
  async wait(ref: string, options: WaitOptions = {}): Promise<Ask> {
    const end = options.waitS === undefined ? undefined : Date.now() + options.waitS * 1000;
    for (;;) {
      // The server waits whole seconds: the wait is rounded to the nearest one.
      const leftS = end === undefined ? WAIT_SLICE_S
        : Math.max(0, Math.min(WAIT_SLICE_S, Math.round((end - Date.now()) / 1000)));
      const reply = await this.#request(
        'GET', `/v1/asks/${encodeURIComponent(ref)}/wait?timeout=${leftS}`, undefined, end);
      const ask = reply.body as Ask;
      if (ask.status !== 'open' || (end !== undefined && end - Date.now() < 500)) {
        return ask;
      }
    }
  }

  /** DELETE /v1/asks/{ref}: withdraws an open ask and returns it; AskClosed when it was not
   * open any more. */
  async withdraw(ref: string): Promise<Ask> {
    try {
      return (await this.#once('DELETE', `/v1/asks/${encodeURIComponent(ref)}`)).body as Ask;
    } catch (error) {
      if (error instanceof AyeError && error.status === 409) {
        throw new AskClosed(409, error.code, 'the ask is no longer open');
      }
      throw error;
    }
  }

  /**
   * May this exact call run? POST /v1/calls, waiting on a pending approval up to `waitS`.
   * Resolves `{decision: 'allow', approval, receipt}` (or `{decision: 'allow'}` when not
   * gated); throws ApprovalRefused (`by`, `note`, `receipt`), ApprovalTimedOut,
   * ApprovalUnavailable, StillPending (`ref`: the same call again finds the same ask), or an
   * AyeError (a wrong token, aye unreachable): never allows on an error.
   */
  async call(operation: string, input?: unknown, options: CallOptions = {}): Promise<Allowed> {
    const body: Record<string, unknown> = {
      operation, input: input === undefined ? null : input, work: options.work ?? null,
    };
    if (options.timeoutS !== undefined) body['timeout_s'] = options.timeoutS;
    if (options.callbackUrl !== undefined) body['callback_url'] = options.callbackUrl;
    const end = options.waitS === undefined ? undefined : Date.now() + options.waitS * 1000;
    for (;;) {
      const reply = (await this.#request('POST', '/v1/calls', body, end)).body;
      if (reply['decision'] === 'allow') {
        return allowed(reply);
      }
      if (reply['decision'] === 'refuse') {
        throw withReceipt(refusal(operation, reply), reply);
      }
      const pending = reply['ask'] as Ask;
      const leftS = end === undefined ? undefined : Math.max(0, (end - Date.now()) / 1000);
      const ask = await this.wait(pending.id, leftS === undefined ? {} : { waitS: leftS });
      if (ask.status === 'open') {
        throw new StillPending(operation, ask);
      }
      if (ask.outcome === 'approval_refused') {
        throw withReceipt(new ApprovalRefused(operation, ask.by ?? null, ask.answer?.note ?? null),
                          ask);
      }
      if (ask.outcome !== 'approved' || ask.status !== 'answered') {
        throw withReceipt(new ApprovalTimedOut(operation), ask);
      }
      // Approved: the same call again uses the approval up and is allowed.
    }
  }

  /**
   * Run `fn` only once this exact call may run, then tell aye what ran: `ran` when `fn`
   * resolves, `failed` (with the error's name) when it throws. Resolves `fn`'s result; throws
   * what call() throws (and `fn` never runs), or `fn`'s own error.
   */
  async gated<T>(operation: string, input: unknown,
                 fn: (allowed: Allowed) => T | Promise<T>, options: CallOptions = {}): Promise<T> {
    const grant = await this.call(operation, input, options);
    let result: T;
    try {
      result = await fn(grant);
    } catch (error) {
      await this.#tell(grant, 'failed', errorName(error));
      throw error;
    }
    await this.#tell(grant, 'ran');
    return result;
  }

  /** POST /v1/calls/outcome: what ran after this agent used `approval` (`ran`, `failed` or
   * `not_run`; `not_run` gives a single grant back once). */
  async report(approval: string, outcome: 'ran' | 'failed' | 'not_run', detail?: string,
               use?: number): Promise<Record<string, unknown>> {
    const body: Record<string, unknown> = { approval, outcome };
    if (detail !== undefined) body['detail'] = detail.slice(0, DETAIL_MAX);
    if (use !== undefined) body['use'] = use;
    return (await this.#once('POST', '/v1/calls/outcome', body, REPORT_TIMEOUT_S)).body;
  }

  /** GET /v1/keys: the JWKS that verifies receipts (verifyReceipt). */
  async keys(): Promise<{ keys: Record<string, unknown>[] }> {
    return (await this.#request('GET', '/v1/keys')).body as { keys: Record<string, unknown>[] };
  }

  async #tell(grant: Allowed, outcome: 'ran' | 'failed', detail?: string): Promise<void> {
    if (grant.approval === undefined) return; // not gated: nothing was approved to report on
    try {
      await this.report(grant.approval, outcome, detail);
    } catch (error) {
      // The block's own result or error stands; say that the report was lost, never why in
      // full (a proxy's body could hold anything).
      console.warn(`aye: could not report ${outcome} for approval ${grant.approval}: ` +
                   errorName(error));
    }
  }

  /** One request, tried again across a restart of aye until `until` (epoch ms; default
   * RETRY_WITHOUT_BOUND_S from now). Only requests safe to repeat come here. */
  async #request(method: string, path: string, body?: unknown, until?: number): Promise<Reply> {
    const end = until ?? Date.now() + RETRY_WITHOUT_BOUND_S * 1000;
    let pause = RETRY_FIRST_MS;
    for (;;) {
      try {
        return await this.#once(method, path, body);
      } catch (error) {
        if (!(error instanceof AyeUnreachable) || Date.now() + pause > end) throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, pause * (0.5 + Math.random())));
      pause = Math.min(pause * 2, RETRY_MAX_MS);
    }
  }

  async #once(method: string, path: string, body?: unknown,
              timeoutS = WAIT_SLICE_S + REQUEST_GRACE_S): Promise<Reply> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.#token}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    let text: string;
    try {
      response = await this.#fetch(this.url + path, {
        method, headers, body: body === undefined ? undefined : JSON.stringify(body),
        redirect: 'error', signal: AbortSignal.timeout(timeoutS * 1000),
      });
      text = await response.text();
    } catch (error) {
      throw new AyeUnreachable(origin(this.url), causeOf(error));
    }
    if (RETRY_STATUSES.has(response.status)) {
      throw new AyeUnreachable(origin(this.url), `HTTP ${response.status}`);
    }
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      throw new AyeError(response.status, 'not_json',
                         `aye answered HTTP ${response.status} with a body that is not JSON`);
    }
    const found = (data !== null && typeof data === 'object' ? data : {}) as
      Record<string, unknown>;
    if (response.status >= 400 && !(response.status === 403 && 'decision' in found)) {
      throw new AyeError(response.status, String(found['error'] ?? 'http'),
                         String(found['message'] ?? `HTTP ${response.status}`),
                         typeof found['field'] === 'string' ? found['field'] : undefined);
    }
    return { status: response.status, body: found };
  }
}

/** `connect({url, token})`: a client acting as the agent whose token this is. */
export function connect(options: ConnectOptions): AyeClient {
  return new AyeClient(options);
}

/** A remembered refusal's 403 says until when in its message (the server's decision_body). */
const REMEMBERED_UNTIL = /not asked again until (\d{4}-\d\d-\d\dT[\d:.]+Z)/;

/** A gated call's 403 decision as the error it means. */
function refusal(operation: string, reply: Record<string, unknown>): AyeError {
  const error = reply['error'];
  if (error === 'approval_refused') {
    const said = REMEMBERED_UNTIL.exec(String(reply['message'] ?? ''));
    return new ApprovalRefused(operation, stringOrNull(reply['by']), stringOrNull(reply['note']),
                               reply['repeat'] === true, said?.[1] ?? null);
  }
  if (error === 'approval_timed_out') return new ApprovalTimedOut(operation);
  if (error === 'approval_unavailable' || !error) return new ApprovalUnavailable(operation);
  return new AyeError(403, String(error), String(reply['message'] ?? error));
}

function allowed(reply: Record<string, unknown>): Allowed {
  const out: Allowed = { decision: 'allow' };
  if (typeof reply['approval'] === 'string') out.approval = reply['approval'];
  if (typeof reply['receipt'] === 'string') out.receipt = reply['receipt'];
  return out;
}

function withReceipt(error: AyeError, reply: Record<string, unknown>): AyeError {
  if (typeof reply['receipt'] === 'string') error.receipt = reply['receipt'];
  return error;
}

function stringOrNull(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/** The name of what was thrown, as Python's gated() reports the exception's type: an Error's
 * `name` (its class's name when it kept the default `Error`), else its type. Never its message. */
export function errorName(error: unknown): string {
  if (error instanceof Error) {
    return error.name && error.name !== 'Error' ? error.name : error.constructor.name || 'Error';
  }
  return typeof error;
}

/** Why a request failed, in a word: Node's fetch hides the system's code (ECONNREFUSED) in
 * its TypeError's cause; a timeout is a TimeoutError. Never a message that could echo a body. */
function causeOf(error: unknown): string {
  const cause = error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined;
  return typeof cause?.code === 'string' ? cause.code : errorName(error);
}

/** Where aye is, for a message: never a userinfo part of the URL. */
function origin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'the given URL';
  }
}

function randomKey(): string {
  return globalThis.crypto.randomUUID().replace(/-/g, '');
}
