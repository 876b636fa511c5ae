//! The JetStream API's errors, as nats-server 2.9.10 reports them in a response's `error`
//! object: an HTTP-like `code`, nats-server's `err_code` (its `server/errors.json` table)
//! and the description, word for word (clients match on the codes, people on the words).

use serde::Serialize;
use std::borrow::Cow;

/// One API error (`{"code":400,"err_code":10058,"description":"..."}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApiError {
    /// HTTP-like status.
    pub code: u16,
    /// nats-server's error identifier number.
    pub err_code: u16,
    /// The text.
    pub description: Cow<'static, str>,
}

pub(crate) const fn e(code: u16, err_code: u16, description: &'static str) -> ApiError {
    ApiError {
        code,
        err_code,
        description: Cow::Borrowed(description),
    }
}

/// An error whose description takes an argument.
pub(crate) fn f(code: u16, err_code: u16, description: String) -> ApiError {
    ApiError {
        code,
        err_code,
        description: Cow::Owned(description),
    }
}

/// `JSBadRequestErr`.
pub const BAD_REQUEST: ApiError = e(400, 10003, "bad request");
/// `JSInvalidJSONErr`.
pub const INVALID_JSON: ApiError = e(400, 10025, "invalid JSON");
/// `JSStreamNotFoundErr`.
pub const STREAM_NOT_FOUND: ApiError = e(404, 10059, "stream not found");
/// `JSStreamNameExistErr`.
pub const STREAM_NAME_EXIST: ApiError = e(
    400,
    10058,
    "stream name already in use with a different configuration",
);
/// `JSStreamMismatchErr`.
pub const STREAM_MISMATCH: ApiError =
    e(400, 10056, "stream name in subject does not match request");
/// `JSStreamSubjectOverlapErr`.
pub const SUBJECT_OVERLAP: ApiError = e(400, 10065, "subjects overlap with an existing stream");
/// `JSStreamReplicasNotSupportedErr`.
pub const REPLICAS_NOT_SUPPORTED: ApiError = e(
    500,
    10074,
    "replicas > 1 not supported in non-clustered mode",
);
/// `JSMirrorWithSubjectsErr`.
pub const MIRROR_WITH_SUBJECTS: ApiError = e(400, 10034, "stream mirrors can not contain subjects");
/// `JSMirrorWithSourcesErr`.
pub const MIRROR_WITH_SOURCES: ApiError = e(
    400,
    10031,
    "stream mirrors can not also contain other sources",
);
/// `JSConsumerNotFoundErr`.
pub const CONSUMER_NOT_FOUND: ApiError = e(404, 10014, "consumer not found");
/// `JSNoMessageFoundErr`.
pub const NO_MESSAGE_FOUND: ApiError = e(404, 10037, "no message found");
/// `JSStreamMessageExceedsMaximumErr`.
pub const MESSAGE_EXCEEDS_MAXIMUM: ApiError = e(400, 10054, "message size exceeds maximum allowed");
/// `JSStreamNotMatchErr`.
pub const EXPECTED_STREAM_MISMATCH: ApiError = e(400, 10060, "expected stream does not match");
/// `JSStreamSealedErr`.
pub const SEALED: ApiError = e(400, 10109, "invalid operation on sealed stream");
/// `JSStreamRollupFailedF`.
pub fn rollup_failed(reason: &str) -> ApiError {
    f(500, 10111, reason.to_string())
}
/// `JSStreamWrongLastSequenceErrF`.
pub fn wrong_last_sequence(seq: u64) -> ApiError {
    f(400, 10071, format!("wrong last sequence: {seq}"))
}
/// `JSStreamWrongLastMsgIDErrF`.
pub fn wrong_last_msg_id(id: &str) -> ApiError {
    f(400, 10070, format!("wrong last msg ID: {id}"))
}
/// `JSStreamInvalidConfigF`: a configuration rule, in nats-server's words.
pub fn invalid_config(reason: impl Into<String>) -> ApiError {
    f(500, 10052, reason.into())
}
/// `JSStreamStoreFailedF`.
pub fn store_failed(reason: impl std::fmt::Display) -> ApiError {
    f(503, 10077, reason.to_string())
}
/// `JSStreamGeneralErrorF`: a failure of the server (a file that could not be written).
pub fn general(reason: impl std::fmt::Display) -> ApiError {
    f(500, 10051, reason.to_string())
}
/// `JSStreamMsgDeleteFailedF`.
pub fn msg_delete_failed(reason: impl std::fmt::Display) -> ApiError {
    f(500, 10057, reason.to_string())
}
/// `JSStreamPurgeFailedF` for a `deny_purge` stream.
pub const PURGE_DENIED: ApiError = e(500, 10110, "stream purge not permitted");
/// A `deny_delete` stream refusing `STREAM.MSG.DELETE`.
pub const DELETE_DENIED: ApiError = e(500, 10057, "message delete not permitted");
/// `JSSequenceNotFoundErrF`.
pub fn sequence_not_found(seq: u64) -> ApiError {
    f(400, 10043, format!("sequence {seq} not found"))
}
/// `JSStreamMirrorNotUpdatableErr`.
pub const MIRROR_NOT_UPDATABLE: ApiError =
    e(400, 10055, "stream mirror configuration can not be updated");
/// `JSReplicasCountCannotBeNegative`.
pub const REPLICAS_NEGATIVE: ApiError = e(400, 10133, "replicas count cannot be negative");
/// `JSMirrorWithStartSeqAndTimeErr`.
pub const MIRROR_START_SEQ_AND_TIME: ApiError = e(
    400,
    10032,
    "stream mirrors can not have both start seq and start time configured",
);
/// `JSStorageResourcesExceededErr`.
pub const STORAGE_RESOURCES_EXCEEDED: ApiError =
    e(500, 10047, "insufficient storage resources available");
/// `JSMemoryResourcesExceededErr`.
pub const MEMORY_RESOURCES_EXCEEDED: ApiError =
    e(500, 10028, "insufficient memory resources available");
/// `JSStreamStoreFailedF` for `discard: new` at a limit ("maximum messages exceeded").
pub fn store_limit(reason: &str) -> ApiError {
    f(503, 10077, reason.to_string())
}
/// `JSStreamNameContainsPathSeparatorsErr`: a stream's name becomes a directory's.
pub const NAME_WITH_PATH_SEPARATORS: ApiError =
    e(400, 10128, "Stream name can not contain path separators");
