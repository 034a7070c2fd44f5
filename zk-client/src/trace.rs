//! The `zk_request` debug span: one per request, with its op, path and xid.
//!
//! Created with the request on the caller's task (so it nests under the caller's spans, a
//! lock's `lock_acquire` for instance), given its xid when the session writes it, closed
//! when the reply is handed back. Without a subscriber that enables `debug` for this crate,
//! `debug_span!` returns a disabled span after one cached check and nothing below runs.

use std::time::Duration;

use bytes::Bytes;
use tracing::Span;
use zk_proto::codec::decode_prefix;
use zk_proto::{ErrorCode, OpCode};

/// A span for a request of `op` whose encoded body is `body`.
pub(crate) fn request_span(op: OpCode, body: &[u8]) -> Span {
    let span = tracing::debug_span!(
        "zk_request",
        op = ?op,
        path = tracing::field::Empty,
        xid = tracing::field::Empty
    );
    if !span.is_disabled() && starts_with_path(op) {
        // Tracing only: the path is the first field of these requests' bodies. Nothing
        // else ever reads a request back.
        if let Ok(path) = decode_prefix::<String>(Bytes::copy_from_slice(body)) {
            span.record("path", path.as_str());
        }
    }
    span
}

/// The request was written with `xid`.
pub(crate) fn sent(span: Span, xid: i32) -> Span {
    span.record("xid", xid);
    span
}

/// Its reply came back after `elapsed`.
pub(crate) fn answered(span: &Span, err: ErrorCode, elapsed: Duration) {
    span.in_scope(|| tracing::debug!(err = ?err, micros = elapsed.as_micros() as u64, "reply"));
}

/// Requests whose body begins with the path (jute `ustring path` first).
pub(crate) fn starts_with_path(op: OpCode) -> bool {
    use OpCode::*;
    matches!(
        op,
        Create
            | Create2
            | CreateContainer
            | CreateTtl
            | Delete
            | Exists
            | GetData
            | SetData
            | GetAcl
            | SetAcl
            | GetChildren
            | GetChildren2
            | Sync
            | CheckWatches
            | RemoveWatches
            | AddWatch
            | GetEphemerals
            | GetAllChildrenNumber
    )
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};

    use super::*;
    use crate::client::encode;
    use zk_proto::records::GetDataRequest;

    /// Records every span field as `name=value`.
    #[derive(Clone, Default)]
    struct Fields(Arc<Mutex<Vec<String>>>);

    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            if let Ok(mut v) = self.0.lock() {
                v.push(format!("{}={value:?}", field.name()));
            }
        }
    }

    impl Subscriber for Fields {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, span: &Attributes<'_>) -> Id {
            span.record(&mut self.clone());
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, values: &Record<'_>) {
            values.record(&mut self.clone());
        }
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, _: &Event<'_>) {}
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    #[test]
    fn the_span_has_op_path_and_xid_when_enabled_and_is_disabled_otherwise() {
        let body = encode(&GetDataRequest {
            path: "/app/x".into(),
            watch: false,
        });
        assert!(request_span(OpCode::GetData, &body).is_disabled());
        let fields = Fields::default();
        tracing::subscriber::with_default(fields.clone(), || {
            let span = request_span(OpCode::GetData, &body);
            drop(sent(span, 42));
        });
        let got = fields.0.lock().unwrap().clone();
        assert_eq!(got, ["op=GetData", "path=\"/app/x\"", "xid=42"]);
    }
}
