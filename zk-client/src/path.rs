//! Client-side path validation and the chroot, in both directions.
//!
//! Every path a caller gives goes through [`Chroot::to_server`] (validate, then prefix) and
//! every path the server sends back (created paths, watch events, multi results) goes through
//! [`Chroot::to_client`] (strip). Nothing else in the crate touches the chroot.

use std::sync::Arc;

use bytes::{BufMut, BytesMut};

use crate::error::{Error, Result};

/// Checks a path the way the Java client's `PathUtils.validatePath` does.
///
/// A path is absolute (`/` first), has no empty segment (`//`), no trailing `/` (except the root
/// `/` itself), no `.` or `..` segment, and none of the characters the reference client
/// rejects: NUL, U+0001..U+001F, U+007F..U+009F, U+D800..U+F8FF, U+FFF0..U+FFFF. Characters
/// outside the Basic Multilingual Plane are rejected too, because Java sees them as surrogate
/// pairs, which fall in the rejected range. A sequential create may end with `/` (the server
/// appends the sequence number): pass `sequential = true` for it.
pub(crate) fn validate(path: &str, sequential: bool) -> Result<()> {
    let invalid = |reason| {
        Err(Error::InvalidPath {
            path: path.to_owned(),
            reason,
        })
    };
    if path.is_empty() {
        return invalid("path must not be empty");
    }
    if !path.starts_with('/') {
        return invalid("path must start with /");
    }
    if path.len() == 1 {
        return Ok(());
    }
    if path.ends_with('/') && !sequential {
        return invalid("path must not end with /");
    }
    // Branch-free passes over the bytes (the compiler checks many at a time): nearly every
    // path is printable ASCII without a `.`, and then only `//` can make a segment invalid.
    let bytes = path.as_bytes();
    let printable = bytes
        .iter()
        .fold(true, |ok, &b| ok & (b.wrapping_sub(0x20) < 0x5f));
    let dot = bytes.iter().fold(false, |dot, &b| dot | (b == b'.'));
    let empty_segment = bytes
        .iter()
        .zip(bytes.iter().skip(1))
        .fold(false, |empty, (&a, &b)| empty | ((a == b'/') & (b == b'/')));
    if empty_segment {
        return invalid("empty node name (//)");
    }
    // Every empty segment is refused above (`//`, a trailing `/` unless sequential) or is
    // the sequential one the server fills in; what is left to check is `.` and `..`.
    if dot
        && path
            .split('/')
            .any(|segment| segment == "." || segment == "..")
    {
        return invalid("relative paths (. or ..) are not allowed");
    }
    if printable {
        return Ok(());
    }
    for c in path.chars() {
        let u = c as u32;
        if u == 0 {
            return invalid("null character not allowed");
        }
        if (0x01..=0x1f).contains(&u)
            || (0x7f..=0x9f).contains(&u)
            || (0xd800..=0xf8ff).contains(&u)
            || (0xfff0..=0xffff).contains(&u)
            || u > 0xffff
        {
            return invalid("invalid character");
        }
    }
    Ok(())
}

/// The chroot of a client: a prefix added to every path sent and removed from every path
/// received. The empty chroot means none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chroot(Arc<str>);

impl Default for Chroot {
    fn default() -> Self {
        Chroot(Arc::from(""))
    }
}

impl Chroot {
    /// A chroot from the part of a connect string after the hosts (`/app`, or `` / `/` for
    /// none).
    pub(crate) fn new(root: &str) -> Result<Self> {
        if root.is_empty() || root == "/" {
            return Ok(Chroot::default());
        }
        validate(root, false)?;
        Ok(Chroot(Arc::from(root)))
    }

    /// The chroot as a path, or `""` when there is none.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// Validates a caller's path and returns the server path.
    pub(crate) fn to_server(&self, path: &str, sequential: bool) -> Result<String> {
        let (root, rest) = self.server_parts(path, sequential)?;
        let mut out = String::with_capacity(root.len() + rest.len());
        out.push_str(root);
        out.push_str(rest);
        Ok(out)
    }

    /// Validates a caller's path and writes the server path into a request body as a jute
    /// `ustring`, without building it as a `String` first: the bytes are those
    /// `put_string(buf, &self.to_server(path, sequential)?)` writes.
    pub(crate) fn put_server(
        &self,
        buf: &mut BytesMut,
        path: &str,
        sequential: bool,
    ) -> Result<()> {
        let (root, rest) = self.server_parts(path, sequential)?;
        let len = i32::try_from(root.len() + rest.len()).map_err(|_| Error::InvalidPath {
            path: path.chars().take(64).collect(),
            reason: "longer than a request can carry",
        })?;
        buf.put_i32(len);
        buf.put_slice(root.as_bytes());
        buf.put_slice(rest.as_bytes());
        Ok(())
    }

    /// Validates a caller's path; the server path is the two parts one after the other.
    fn server_parts<'a>(&'a self, path: &'a str, sequential: bool) -> Result<(&'a str, &'a str)> {
        validate(path, sequential)?;
        if self.0.is_empty() {
            return Ok(("", path));
        }
        if path == "/" {
            if sequential {
                // The server would append the sequence to the chroot's own name and create a
                // sibling of the chroot node, outside it (the Java client does just that). A
                // chroot is an isolation boundary: refuse.
                return Err(Error::InvalidPath {
                    path: path.to_owned(),
                    reason: "a sequential create of the chroot itself would land outside it",
                });
            }
            return Ok((&self.0, ""));
        }
        Ok((&self.0, path))
    }

    /// Removes the chroot from a server path. A path outside the chroot (which the server
    /// never sends for this session's requests) is returned unchanged.
    pub(crate) fn to_client(&self, path: &str) -> String {
        if self.0.is_empty() {
            return path.to_owned();
        }
        match path.strip_prefix(&*self.0) {
            Some("") => "/".to_owned(),
            Some(rest) if rest.starts_with('/') => rest.to_owned(),
            _ => path.to_owned(),
        }
    }

    /// Like [`Chroot::to_client`], taking ownership to avoid a copy when there is no chroot.
    pub(crate) fn strip_owned(&self, path: String) -> String {
        if self.0.is_empty() {
            path
        } else {
            self.to_client(&path)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(p: &str) -> bool {
        validate(p, false).is_ok()
    }

    #[test]
    fn validation_matches_the_java_rules() {
        for good in [
            "/",
            "/a",
            "/a/b",
            "/a.b",
            "/.a",
            "/a..",
            "/...",
            "/é",
            "/a b",
            "/zookeeper",
        ] {
            assert!(ok(good), "{good:?} should be valid");
        }
        for bad in [
            "",
            "a",
            "a/b",
            "/a/",
            "//",
            "/a//b",
            "/.",
            "/..",
            "/a/./b",
            "/a/../b",
            "/a/.",
            "/a\0b",
            "/a\u{1}",
            "/a\u{7f}",
            "/a\u{9f}",
            "/\u{e000}",
            "/\u{fff0}",
            "/\u{1f600}",
        ] {
            assert!(!ok(bad), "{bad:?} should be invalid");
        }
        assert!(validate("/a/lock-", true).is_ok());
        assert!(validate("/a/", true).is_ok());
        assert!(validate("/a//", true).is_err());
        // Segment errors are reported before character errors.
        for (bad, reason) in [
            ("/a//\u{1}", "empty node name (//)"),
            ("/a/./\u{1}", "relative paths (. or ..) are not allowed"),
            ("/a/b\u{1}", "invalid character"),
        ] {
            match validate(bad, false) {
                Err(Error::InvalidPath { reason: got, .. }) => assert_eq!(got, reason, "{bad:?}"),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
        assert!(validate("/a.b/c./..d/x", false).is_ok());
        assert!(validate("/a.b/", true).is_ok());
        assert!(validate("/a/./", true).is_err());
        match validate("x", false) {
            Err(Error::InvalidPath { path, reason }) => {
                assert_eq!(path, "x");
                assert_eq!(reason, "path must start with /");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_sequential_create_of_the_chroot_itself_is_refused() {
        let chroot = Chroot::new("/app").unwrap();
        assert!(matches!(
            chroot.to_server("/", true),
            Err(Error::InvalidPath { .. })
        ));
        assert_eq!(chroot.to_server("/", false).unwrap(), "/app");
        assert_eq!(chroot.to_server("/job-", true).unwrap(), "/app/job-");
        assert_eq!(Chroot::default().to_server("/", true).unwrap(), "/");
    }

    #[test]
    fn chroot_adds_and_strips() {
        let c = Chroot::new("/app").unwrap();
        assert_eq!(c.to_server("/", false).unwrap(), "/app");
        assert_eq!(c.to_server("/x/y", false).unwrap(), "/app/x/y");
        assert_eq!(c.to_client("/app"), "/");
        assert_eq!(c.to_client("/app/x"), "/x");
        assert_eq!(c.to_client("/apple"), "/apple");
        assert_eq!(c.to_client("/other"), "/other");
        assert!(c.to_server("bad", false).is_err());

        let none = Chroot::new("/").unwrap();
        assert_eq!(none.to_server("/x", false).unwrap(), "/x");
        assert_eq!(none.strip_owned("/x".into()), "/x");
        assert!(Chroot::new("/a/").is_err());
    }
}
