// @sealtrail/client: the Sealtrail client SDK for JavaScript runtimes with Web Crypto
// Ed25519 (Node >= 20, current browsers, edge runtimes). The file-backed sthStore for
// Node is in "@sealtrail/client/node".

export { SealtrailClient, DEFAULT_BASE_URL, DEFAULT_AUTO_VERIFY_INTERVAL_MS, signedStreamName } from "./client.js";
export type { ClientOptions } from "./client.js";
export { APIError, TamperError, VerificationError, UnexpectedResponseError, ProjectMismatchError } from "./errors.js";
export type { TamperReason, Stream, FieldError } from "./errors.js";
export { MemorySTHStore, pinKey } from "./store.js";
export type { STHStore, PinnedHead } from "./store.js";
export type * from "./types.js";
export { Auditor, AuditError, ReasonRequiredError, DeniedError, DEFAULT_TOOL_ACTION, hashJSON } from "./wrap.js";
export type { Logger, WrapperOptions, ToolSpec, ToolCall } from "./wrap.js";
export { signedEventBody } from "./sign.js";
export type { SignedEvent } from "./sign.js";

// The primitives library.
export { canonicalize, canonicalizeJSON, parseStrict, canonicalNumber, CanonError } from "./jcs.js";
export type { CanonErrorKind } from "./jcs.js";
export { toHex, fromHex, utf8, sha256, randomBytes, generateKeyPair, importSeed, ed25519Sign, ed25519Verify } from "./bytes.js";
export type { KeyPair, SigningKey } from "./bytes.js";
export {
  LEAF_VERSION,
  TREE_HEAD_VERSION,
  SIGNING_PROTOCOL_VERSION,
  RECEIPT_VERSION,
  SIGNATURE_ALGORITHM,
  SIGNED_STREAM_EVENTS,
  SIGNED_STREAM_PROJECT_AUDIT,
  PAYLOAD_MEMBERS,
  NONCE_SIZE,
  newEventId,
  validEventId,
  newNonce,
  commitment,
  commitPayload,
  eventSigningMessage,
  parsePrivateKey,
  parsePublicKey,
  parseSignature,
  signEvent,
  verifyEventSignature,
  formatTime,
  parseTime,
  validateLeaf,
  encodeLeaf,
  hashLeaf,
} from "./event.js";
export type { Leaf } from "./event.js";
export {
  EMPTY_ROOT_HEX,
  ProofError,
  leafHash,
  nodeHash,
  parseHash,
  rootOf,
  proveInclusion,
  proveConsistency,
  rootFromInclusion,
  verifyInclusion,
  verifyConsistency,
  RootBuilder,
} from "./merkle.js";
export type { Hash } from "./merkle.js";
export {
  SignatureError,
  sthSigningBytes,
  signSTH,
  verifySTH,
  receiptSigningBytes,
  signReceipt,
  verifyReceipt,
  checkpointOrigin,
  checkpointVerifierKey,
  signCheckpoint,
  openCheckpoint,
  BREAK_SEQUENCE_GAP,
  BREAK_CONTENT_TAMPERED,
  BREAK_LEAF_MISMATCH,
  BREAK_INVALID_CLIENT_SIGNATURE,
  BREAK_ROOT_MISMATCH,
} from "./sth.js";
export type { STH, Receipt, ChainBreak, Checkpoint } from "./sth.js";
export { decodeExportLine, Rebuilder, verifyExport, ExportLineError, ChainBreakError } from "./export.js";
export type { ExportRecord, RebuildOptions, RebuildStats, ExportVerification } from "./export.js";
export { verifyKeyHistory, keyMoveRefusal, keyTransitionSigningBytes, KEY_HISTORY_VERSION } from "./keyhistory.js";
export type { KeyHistory, KeyTransition } from "./keyhistory.js";
