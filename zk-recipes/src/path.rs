//! Paths, in one place: joining a child to its parent, splitting a path, and the checks of
//! what a user passes (a recipe's base path, a cache's root, one path segment).
//!
//! A base room: imports only `error`.

use crate::error::{Error, Result};

/// `parent/name`, the path of a child (`/` + `name` under the root).
pub(crate) fn join(parent: &str, name: &str) -> String {
    let mut path = String::with_capacity(parent.len() + 1 + name.len());
    if parent != "/" {
        path.push_str(parent);
    }
    path.push('/');
    path.push_str(name);
    path
}

/// The parent of a path (`/a/b` → `/a`; `/a` → `/`).
pub(crate) fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// The last segment of a path (`/a/b` → `b`).
pub(crate) fn name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Checks a recipe's base path (a lock, a latch, a node, a group...): absolute, not the
/// root, no trailing `/`. Returns it owned.
///
/// # Errors
///
/// [`Error::InvalidPath`] saying what is wrong.
pub(crate) fn check_base(path: &str) -> Result<String> {
    let reason = if !path.starts_with('/') {
        "must start with /"
    } else if path == "/" {
        "must not be the root"
    } else if path.ends_with('/') {
        "must not end with /"
    } else {
        return Ok(path.to_owned());
    };
    Err(Error::InvalidPath {
        path: path.to_owned(),
        reason,
    })
}

/// Checks a cache's root: absolute (the root itself is fine), no trailing `/`, no empty
/// segment.
///
/// # Errors
///
/// [`Error::InvalidPath`] saying what is wrong.
pub(crate) fn check_root(path: &str) -> Result<()> {
    let reason = if !path.starts_with('/') {
        "must start with /"
    } else if path.len() > 1 && path.ends_with('/') {
        "must not end with /"
    } else if path.contains("//") {
        "empty segment"
    } else {
        return Ok(());
    };
    Err(Error::InvalidPath {
        path: path.to_owned(),
        reason,
    })
}

/// Checks one path segment a user names (a member id, a service name, an instance id): not
/// empty, no `/`, not `.` or `..`. `what` says what it names, for the error.
///
/// # Errors
///
/// [`Error::InvalidArgument`] with `what`.
pub(crate) fn check_segment(segment: &str, what: &'static str) -> Result<()> {
    if segment.is_empty() || segment.contains('/') || segment == "." || segment == ".." {
        Err(Error::InvalidArgument(what))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_parent_and_name_agree_at_the_root_and_below() {
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/a", "b"), "/a/b");
        assert_eq!(parent("/a/b"), "/a");
        assert_eq!(parent("/a"), "/");
        assert_eq!(name("/a/b"), "b");
        assert_eq!(name(&join("/a", "c")), "c");
        assert_eq!(parent(&join("/a", "c")), "/a");
    }

    #[test]
    fn checks_say_what_is_wrong() {
        assert_eq!(check_base("/a/b").unwrap(), "/a/b");
        for bad in ["a", "/", "/a/"] {
            assert!(
                matches!(check_base(bad), Err(Error::InvalidPath { .. })),
                "{bad}"
            );
        }
        assert!(check_root("/").is_ok());
        assert!(check_root("/a").is_ok());
        for bad in ["a", "/a/", "/a//b"] {
            assert!(
                matches!(check_root(bad), Err(Error::InvalidPath { .. })),
                "{bad}"
            );
        }
        assert!(check_segment("w-1", "id").is_ok());
        for bad in ["", "a/b", ".", ".."] {
            assert!(
                matches!(check_segment(bad, "id"), Err(Error::InvalidArgument("id"))),
                "{bad:?}"
            );
        }
    }
}
