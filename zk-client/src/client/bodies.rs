//! Request bodies encoded straight from the caller's borrowed path, data and ACL.
//!
//! The records in `zk_proto::records` own their fields, so encoding one means copying the
//! path (with the chroot), the data and the ACL into it first, only to copy them once more
//! into the body. The bodies here write the same bytes from what the caller lends: one
//! allocation per request (the body) instead of two to five. The tests check every body
//! byte for byte against its record's encoding.

use bytes::{BufMut, BytesMut};
use zk_proto::codec::{put_bool, put_buffer, put_vec};
use zk_proto::OpCode;

use super::{CreateOptions, BODY_CAPACITY};
use crate::error::{Error, Result};
use crate::path::Chroot;

/// A body starting with the server path of `path`.
fn with_path(chroot: &Chroot, path: &str, sequential: bool) -> Result<BytesMut> {
    let mut body = BytesMut::with_capacity(BODY_CAPACITY);
    chroot.put_server(&mut body, path, sequential)?;
    Ok(body)
}

/// `{path, watch}`: the body of `exists`, `getData`, `getChildren` and `getChildren2`.
pub(crate) fn path_watch(chroot: &Chroot, path: &str, watch: bool) -> Result<BytesMut> {
    let mut body = with_path(chroot, path, false)?;
    put_bool(&mut body, watch);
    Ok(body)
}

/// `{path, version}`: a `DeleteRequest`.
pub(crate) fn delete(chroot: &Chroot, path: &str, version: Option<i32>) -> Result<BytesMut> {
    let mut body = with_path(chroot, path, false)?;
    body.put_i32(version.unwrap_or(-1));
    Ok(body)
}

/// `{path, data, version}`: a `SetDataRequest`.
pub(crate) fn set_data(
    chroot: &Chroot,
    path: &str,
    data: &[u8],
    version: Option<i32>,
) -> Result<BytesMut> {
    let mut body = with_path(chroot, path, false)?;
    put_buffer(&mut body, data);
    body.put_i32(version.unwrap_or(-1));
    Ok(body)
}

/// The opcode a create with these options uses, and its TTL in milliseconds (TTL modes
/// only), after the checks every create makes: a non-empty ACL, a TTL exactly for the TTL
/// modes, and at least 1 ms of it.
pub(crate) fn create_kind(options: &CreateOptions) -> Result<(OpCode, Option<i64>)> {
    if options.acl.is_empty() {
        return Err(Error::InvalidAcl);
    }
    if options.mode.is_ttl() {
        let ttl = options
            .ttl
            .ok_or(Error::InvalidArgument("a TTL mode needs a ttl"))?;
        let ttl = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        if ttl <= 0 {
            return Err(Error::InvalidArgument("ttl must be at least 1 ms"));
        }
        return Ok((OpCode::CreateTtl, Some(ttl)));
    }
    if options.ttl.is_some() {
        return Err(Error::InvalidArgument("ttl given for a mode without TTL"));
    }
    let code = if options.mode.is_container() {
        OpCode::CreateContainer
    } else {
        OpCode::Create2
    };
    Ok((code, None))
}

/// `{path, data, acl, flags[, ttl]}`: a `CreateRequest` or `CreateTtlRequest`, and its
/// opcode.
pub(crate) fn create(
    chroot: &Chroot,
    path: &str,
    data: &[u8],
    options: &CreateOptions,
) -> Result<(OpCode, BytesMut)> {
    let mut body = with_path(chroot, path, options.mode.is_sequential())?;
    let (code, ttl) = create_kind(options)?;
    put_buffer(&mut body, data);
    put_vec(&mut body, &options.acl);
    body.put_i32(options.mode.flags());
    if let Some(ttl) = ttl {
        body.put_i64(ttl);
    }
    Ok((code, body))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bytes::Bytes;
    use zk_proto::records::{
        CreateMode, DeleteRequest, ExistsRequest, GetChildren2Request, GetChildrenRequest,
        GetDataRequest, MultiOp, SetDataRequest,
    };
    use zk_proto::{Acl, Id, Perms};

    use super::*;
    use crate::client::encode;
    use crate::client::node::create_op;

    fn chroots() -> Vec<Chroot> {
        vec![Chroot::default(), Chroot::new("/app/x").unwrap()]
    }

    const PATHS: [&str; 4] = ["/", "/a", "/a/b-", "/é/日本"];

    #[test]
    fn path_bodies_are_their_records_byte_for_byte() {
        for chroot in chroots() {
            for path in PATHS {
                let server = chroot.to_server(path, false).unwrap();
                for watch in [false, true] {
                    let ours = path_watch(&chroot, path, watch).unwrap();
                    let path = server.clone();
                    assert_eq!(ours, encode(&ExistsRequest { path, watch }));
                    let path = server.clone();
                    assert_eq!(ours, encode(&GetDataRequest { path, watch }));
                    let path = server.clone();
                    assert_eq!(ours, encode(&GetChildrenRequest { path, watch }));
                    let path = server.clone();
                    assert_eq!(ours, encode(&GetChildren2Request { path, watch }));
                }
                for version in [None, Some(0), Some(7), Some(i32::MAX)] {
                    let expected = DeleteRequest {
                        path: server.clone(),
                        version: version.unwrap_or(-1),
                    };
                    assert_eq!(delete(&chroot, path, version).unwrap(), encode(&expected));
                    for data in [&b""[..], b"x", &[0u8; 300]] {
                        let expected = SetDataRequest {
                            path: server.clone(),
                            data: Bytes::copy_from_slice(data),
                            version: version.unwrap_or(-1),
                        };
                        let ours = set_data(&chroot, path, data, version).unwrap();
                        assert_eq!(ours, encode(&expected));
                    }
                }
            }
        }
    }

    #[test]
    fn create_bodies_are_their_records_byte_for_byte() {
        let digest = Acl {
            perms: Perms::READ,
            id: Id::new("digest", "u:hash"),
        };
        let mut options = vec![
            CreateOptions::persistent(),
            CreateOptions::ephemeral_sequential(),
            CreateOptions::container(),
            CreateOptions::persistent().with_acl(vec![digest.clone(), digest]),
        ];
        for mode in [
            CreateMode::PersistentWithTtl,
            CreateMode::PersistentSequentialWithTtl,
        ] {
            options.push(CreateOptions::new(mode).with_ttl(Duration::from_millis(1500)));
        }
        for chroot in chroots() {
            for path in ["/a", "/a/b-", "/é/日本"] {
                for options in &options {
                    for data in [&b""[..], b"payload"] {
                        let (code, ours) = create(&chroot, path, data, options).unwrap();
                        let (op_code, expected) = match create_op(&chroot, path, data, options) {
                            Ok(MultiOp::CreateTtl(r)) => (OpCode::CreateTtl, encode(&r)),
                            Ok(MultiOp::CreateContainer(r)) => {
                                (OpCode::CreateContainer, encode(&r))
                            }
                            // The multi op is a plain create; the body is the same.
                            Ok(MultiOp::Create(r)) => (OpCode::Create2, encode(&r)),
                            other => panic!("{other:?}"),
                        };
                        assert_eq!((code, ours), (op_code, expected));
                    }
                }
            }
        }
    }

    #[test]
    fn bad_creates_and_paths_fail_as_before() {
        let chroot = Chroot::new("/app").unwrap();
        let cases = [
            CreateOptions::persistent().with_acl(Vec::new()),
            CreateOptions::new(CreateMode::PersistentWithTtl),
            CreateOptions::new(CreateMode::PersistentWithTtl).with_ttl(Duration::ZERO),
            CreateOptions::persistent().with_ttl(Duration::from_secs(1)),
        ];
        for options in &cases {
            let ours = create(&chroot, "/a", b"", options).map(drop);
            let theirs = create_op(&chroot, "/a", b"", options).map(drop);
            assert_eq!(format!("{ours:?}"), format!("{theirs:?}"));
            assert!(ours.is_err());
        }
        // A sequential create of the chroot itself, and invalid paths.
        let seq = CreateOptions::persistent_sequential();
        assert!(matches!(
            create(&chroot, "/", b"", &seq),
            Err(Error::InvalidPath { .. })
        ));
        for bad in ["", "a", "/a/", "/a//b", "/a/./b", "/a/../b"] {
            assert!(matches!(
                path_watch(&chroot, bad, false),
                Err(Error::InvalidPath { .. })
            ));
            assert!(matches!(
                delete(&chroot, bad, None),
                Err(Error::InvalidPath { .. })
            ));
        }
    }
}
