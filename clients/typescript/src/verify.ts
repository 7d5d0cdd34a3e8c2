/**
 * Checking what aye signed, offline, with WebCrypto only: a receipt (Ed25519, against the JWKS
 * of `GET /v1/keys`) and a callback (HMAC-SHA256 of the exact body with the agent's callback
 * secret, in `X-Aye-Signature-256: sha256=<hex>`).
 */

import { BadReceipt, BadSignature } from './errors.js';

export const RECEIPT_TYP = 'aye-receipt+jwt';
export const SIGNATURE_HEADER = 'X-Aye-Signature-256';
export const DELIVERY_HEADER = 'X-Aye-Delivery';
export const EVENT_HEADER = 'X-Aye-Event';
const PREFIX = 'sha256=';

/** One public key of `GET /v1/keys`. */
export type Jwk = { kty?: string; crv?: string; x?: string; kid?: string; alg?: string;
                    [field: string]: unknown };
/** The JWKS of `GET /v1/keys`, or its list of keys. */
export type Jwks = { keys: Jwk[] } | Jwk[];

/** What a receipt says (contract: "Receipts"). */
export type ReceiptPayload = {
  iss: string;
  sub: string;
  ref?: string;
  agent?: string;
  operation?: string;
  input_sha256?: string;
  call_sha256?: string;
  work?: unknown;
  decision?: 'approved' | 'approval_refused' | 'approval_timed_out';
  approvers?: { by: string; person: string | null; surface: string; at: string }[];
  iat: number;
  exp?: number;
  [claim: string]: unknown;
};

/**
 * The receipt's payload once its signature checks against `jwks`; BadReceipt otherwise. Only
 * `alg` EdDSA with `typ` aye-receipt+jwt and a `kid` among the keys is taken. An approval's
 * `exp` says until when its grant could be used; a receipt stays proof after it, so `exp` is
 * not enforced.
 */
export async function verifyReceipt(receipt: string, jwks: Jwks): Promise<ReceiptPayload> {
  const parts = typeof receipt === 'string' ? receipt.split('.') : [];
  if (parts.length !== 3) throw new BadReceipt('not a compact JWS');
  const [head, body, signature] = parts as [string, string, string];
  const header = jsonPart(head, 'header');
  if (header['typ'] !== RECEIPT_TYP || header['alg'] !== 'EdDSA') {
    throw new BadReceipt(`not an aye receipt (typ ${show(header['typ'])}, ` +
                         `alg ${show(header['alg'])}): only EdDSA is taken`);
  }
  const listed = Array.isArray(jwks) ? jwks : Array.isArray(jwks?.keys) ? jwks.keys : [];
  const found = listed.find((key) => typeof key?.kid === 'string' && key.kid === header['kid']);
  if (found === undefined) {
    throw new BadReceipt(`no key ${show(header['kid'])} among these keys (GET /v1/keys)`);
  }
  if (found.kty !== 'OKP' || found.crv !== 'Ed25519' || typeof found.x !== 'string' ||
      (found.alg !== undefined && found.alg !== 'EdDSA')) {
    throw new BadReceipt(`key ${show(found.kid)} is not an Ed25519 key`);
  }
  let ok: boolean;
  try {
    const key = await crypto.subtle.importKey(
      'jwk', { kty: 'OKP', crv: 'Ed25519', x: found.x }, { name: 'Ed25519' }, false, ['verify']);
    ok = await crypto.subtle.verify({ name: 'Ed25519' }, key, fromBase64Url(signature),
                                    new TextEncoder().encode(`${head}.${body}`));
  } catch {
    throw new BadReceipt('the receipt does not verify: malformed key or signature');
  }
  if (!ok) throw new BadReceipt('the receipt does not verify: its signature does not match');
  const payload = jsonPart(body, 'payload');
  for (const claim of ['iss', 'sub', 'iat']) {
    if (!(claim in payload)) throw new BadReceipt(`the receipt has no ${claim}`);
  }
  return payload as ReceiptPayload;
}

/** Request headers as a receiver has them: fetch's Headers, or Node's incoming headers. */
export type HeadersLike =
  | Headers
  | Record<string, string | string[] | undefined>;

/** What a callback carries: `{event: 'ask.closed', ask: {...the agent's view...}}`. */
export type CallbackPayload = { event: string; ask: Record<string, unknown>;
                                [field: string]: unknown };

/**
 * The callback's payload once `X-Aye-Signature-256` checks against `secret` (the value of the
 * agent's `callback_secret_env`), compared in constant time; BadSignature otherwise. `body` is
 * the request's exact bytes, as read (a string is taken as its UTF-8 bytes). Dedupe deliveries
 * on `X-Aye-Delivery`: the same on every retry.
 */
export async function verifyCallback(
  body: Uint8Array | ArrayBuffer | string, headers: HeadersLike, secret: string | Uint8Array,
): Promise<CallbackPayload> {
  // Copies: WebCrypto takes bytes on an ArrayBuffer of their own (never a shared one).
  const key = typeof secret === 'string' ? new TextEncoder().encode(secret)
    : secret instanceof Uint8Array ? new Uint8Array(secret) : undefined;
  if (!key || key.length === 0) {
    throw new TypeError('verifyCallback needs the agent\'s callback secret, not an empty one');
  }
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body)
    : body instanceof ArrayBuffer || body instanceof Uint8Array ? new Uint8Array(body) : undefined;
  if (bytes === undefined) {
    throw new TypeError('verifyCallback takes the body\'s exact bytes, as received');
  }
  const given = header(headers, SIGNATURE_HEADER)?.trim();
  if (!given) throw new BadSignature(`no ${SIGNATURE_HEADER} header: not a callback from aye`);
  const mac = given.startsWith(PREFIX) ? fromHex(given.slice(PREFIX.length)) : undefined;
  const hmac = await crypto.subtle.importKey(
    'raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
  // WebCrypto's verify compares in constant time.
  if (mac === undefined || !(await crypto.subtle.verify('HMAC', hmac, mac, bytes))) {
    throw new BadSignature(`${SIGNATURE_HEADER} does not match the body and this secret`);
  }
  let payload: unknown;
  try {
    payload = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw new BadSignature('the signed body is not JSON');
  }
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
    throw new BadSignature('the signed body is not a JSON object');
  }
  return payload as CallbackPayload;
}

/** A header by name, whatever its case. */
function header(headers: HeadersLike, name: string): string | undefined {
  if (typeof (headers as Headers)?.get === 'function') {
    return (headers as Headers).get(name) ?? undefined;
  }
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers ?? {})) {
    if (key.toLowerCase() === wanted) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

function jsonPart(part: string, what: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(new TextDecoder('utf-8', { fatal: true })
      .decode(fromBase64Url(part)));
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      return value as Record<string, unknown>;
    }
  } catch {
    // worded below
  }
  throw new BadReceipt(`not a compact JWS: its ${what} is not a JSON object`);
}

function fromBase64Url(text: string): Uint8Array<ArrayBuffer> {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new BadReceipt('not a compact JWS: not base64url');
  const plain = text.replace(/-/g, '+').replace(/_/g, '/');
  const binary = atob(plain + '='.repeat((4 - (plain.length % 4)) % 4));
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

function fromHex(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^(?:[0-9a-fA-F]{2})+$/.test(text)) return undefined;
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return out;
}

function show(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value.slice(0, 80)) : String(value);
}
