//! [`SchemaSet`]: rules per path pattern, checked before a [`Model`](super::Model) writes
//! (Curator's `SchemaSet` and `Schema`).

use std::fmt;
use std::sync::Arc;

use zk_client::CreateMode;

use crate::error::{Error, Result};

/// Whether a node must, may or must not be of a kind (ephemeral, sequential): Curator's
/// `Schema.Allowance` (`MUST`, `CAN`, `CANNOT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Allowance {
    /// Either way.
    #[default]
    Can,
    /// Only this kind.
    Must,
    /// Never this kind.
    MustNot,
}

impl Allowance {
    /// `None` when `is` obeys the rule, else what is wrong (`kind`: "ephemeral"...).
    fn check(self, is: bool, kind: &str) -> Option<String> {
        match (self, is) {
            (Allowance::Must, false) => Some(format!("must be {kind}")),
            (Allowance::MustNot, true) => Some(format!("must not be {kind}")),
            _ => None,
        }
    }
}

/// Checks a node's data (the encoded bytes, before compression); `Err(reason)` refuses it.
type Validator = Arc<dyn Fn(&[u8]) -> std::result::Result<(), String> + Send + Sync>;

/// The rules of the nodes whose path matches a pattern (Curator's `Schema`): the kinds
/// of node allowed ([`Allowance`] for ephemeral and sequential), whether they may be deleted,
/// and a check of their data.
///
/// The pattern is a path whose segments are literal or a parameter (`{name}`, one segment,
/// as in [`Model`](super::Model) paths and Curator's `ZPath`): `/users/{id}/config`
/// matches `/users/alice/config`. A sequential node's path matches by the name it is
/// created with (`/jobs/{job}` matches `/jobs/job-`).
///
/// ```
/// use zk_recipes::model::{Allowance, Schema};
/// let schema = Schema::new("worker", "/workers/{host}")
///     .unwrap()
///     .ephemeral(Allowance::Must)
///     .data(|data| if data.is_empty() { Err("empty".into()) } else { Ok(()) });
/// assert!(schema.matches("/workers/host-1"));
/// assert!(!schema.matches("/workers/host-1/x"));
/// ```
#[derive(Clone)]
pub struct Schema {
    name: String,
    pattern: Vec<String>,
    ephemeral: Allowance,
    sequential: Allowance,
    deletable: bool,
    validator: Option<Validator>,
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schema")
            .field("name", &self.name)
            .field("pattern", &self.pattern())
            .field("ephemeral", &self.ephemeral)
            .field("sequential", &self.sequential)
            .field("deletable", &self.deletable)
            .field("validator", &self.validator.as_ref().map(|_| "fn"))
            .finish()
    }
}

fn is_parameter(segment: &str) -> bool {
    segment.len() >= 2 && segment.starts_with('{') && segment.ends_with('}')
}

impl Schema {
    /// The schema `name` for the paths matching `pattern`: any kind of node, deletable,
    /// any data, until said otherwise.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] for a pattern that is not absolute, is the root or ends with
    /// `/`.
    pub fn new(name: &str, pattern: &str) -> Result<Schema> {
        let pattern = crate::path::check_base(pattern)?;
        Ok(Schema {
            name: name.to_owned(),
            pattern: pattern.split('/').skip(1).map(str::to_owned).collect(),
            ephemeral: Allowance::Can,
            sequential: Allowance::Can,
            deletable: true,
            validator: None,
        })
    }

    /// Whether the nodes must, may or must not be ephemeral.
    #[must_use]
    pub fn ephemeral(mut self, rule: Allowance) -> Schema {
        self.ephemeral = rule;
        self
    }

    /// Whether the nodes must, may or must not be sequential.
    #[must_use]
    pub fn sequential(mut self, rule: Allowance) -> Schema {
        self.sequential = rule;
        self
    }

    /// Whether the nodes may be deleted (Curator's `canBeDeleted`).
    #[must_use]
    pub fn deletable(mut self, deletable: bool) -> Schema {
        self.deletable = deletable;
        self
    }

    /// Checks the data of every create and set with `check` (the encoded bytes, before
    /// compression): `Err(reason)` refuses the write (Curator's `SchemaValidator`).
    #[must_use]
    pub fn data(
        mut self,
        check: impl Fn(&[u8]) -> std::result::Result<(), String> + Send + Sync + 'static,
    ) -> Schema {
        self.validator = Some(Arc::new(check));
        self
    }

    /// The schema's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The pattern, as given.
    pub fn pattern(&self) -> String {
        format!("/{}", self.pattern.join("/"))
    }

    /// Whether `path` is one of the schema's nodes.
    pub fn matches(&self, path: &str) -> bool {
        let mut segments = path.split('/').skip(1);
        let mut pattern = self.pattern.iter();
        loop {
            match (pattern.next(), segments.next()) {
                (None, None) => return true,
                (Some(p), Some(s)) if !s.is_empty() && (is_parameter(p) || p == s) => {}
                _ => return false,
            }
        }
    }

    fn refuse(&self, path: &str, reason: String) -> Error {
        Error::Schema {
            path: path.to_owned(),
            schema: self.name.clone(),
            reason,
        }
    }

    fn check_data(&self, path: &str, data: &[u8]) -> Result<()> {
        match &self.validator {
            Some(check) => check(data).map_err(|why| self.refuse(path, why)),
            None => Ok(()),
        }
    }

    /// Checks a create of `path` in `mode` with `data`.
    ///
    /// # Errors
    ///
    /// [`Error::Schema`] saying which rule the create breaks.
    pub fn check_create(&self, path: &str, mode: CreateMode, data: &[u8]) -> Result<()> {
        let kinds = [
            self.ephemeral.check(mode.is_ephemeral(), "ephemeral"),
            self.sequential.check(mode.is_sequential(), "sequential"),
        ];
        if let Some(why) = kinds.into_iter().flatten().next() {
            return Err(self.refuse(path, why));
        }
        self.check_data(path, data)
    }

    /// Checks a set of `path`'s data to `data`.
    ///
    /// # Errors
    ///
    /// [`Error::Schema`] when the data check refuses it.
    pub fn check_set(&self, path: &str, data: &[u8]) -> Result<()> {
        self.check_data(path, data)
    }

    /// Checks a delete of `path`.
    ///
    /// # Errors
    ///
    /// [`Error::Schema`] when the nodes may not be deleted.
    pub fn check_delete(&self, path: &str) -> Result<()> {
        if self.deletable {
            Ok(())
        } else {
            Err(self.refuse(path, "may not be deleted".to_owned()))
        }
    }
}

/// Schemas for the paths of an application (Curator's `SchemaSet`): each write of a
/// [`Model`](super::Model) given the set ([`Model::schemas`](super::Model::schemas)) is
/// checked, before anything is sent, against the first schema whose pattern matches its
/// path. A path no schema matches is allowed, or refused with
/// [`strict`](Self::strict) (Curator's `SchemaSet` without its default schema).
///
/// ```
/// use zk_client::CreateMode;
/// use zk_recipes::model::{Allowance, Schema, SchemaSet};
/// let schemas = SchemaSet::new([
///     Schema::new("config", "/app/config/{key}").unwrap().ephemeral(Allowance::MustNot),
///     Schema::new("member", "/app/members/{id}").unwrap().ephemeral(Allowance::Must),
/// ])
/// .strict(true);
/// assert!(schemas.check_create("/app/config/limit", CreateMode::Persistent, b"1").is_ok());
/// assert!(schemas.check_create("/app/members/a", CreateMode::Persistent, b"").is_err());
/// assert!(schemas.check_create("/elsewhere", CreateMode::Persistent, b"").is_err());
/// ```
#[derive(Debug, Clone, Default)]
pub struct SchemaSet {
    schemas: Vec<Schema>,
    strict: bool,
}

impl SchemaSet {
    /// A set of `schemas`, tried in order; paths none matches are allowed.
    pub fn new(schemas: impl IntoIterator<Item = Schema>) -> SchemaSet {
        SchemaSet {
            schemas: schemas.into_iter().collect(),
            strict: false,
        }
    }

    /// With `true`, a path no schema matches is refused.
    #[must_use]
    pub fn strict(mut self, strict: bool) -> SchemaSet {
        self.strict = strict;
        self
    }

    /// The first schema matching `path`.
    pub fn schema_for(&self, path: &str) -> Option<&Schema> {
        self.schemas.iter().find(|s| s.matches(path))
    }

    fn with<T>(&self, path: &str, check: impl FnOnce(&Schema) -> Result<T>) -> Result<()> {
        match self.schema_for(path) {
            Some(schema) => check(schema).map(|_| ()),
            None if self.strict => Err(Error::Schema {
                path: path.to_owned(),
                schema: String::new(),
                reason: "no schema matches the path".to_owned(),
            }),
            None => Ok(()),
        }
    }

    /// Checks a create (see [`Schema::check_create`]).
    ///
    /// # Errors
    ///
    /// [`Error::Schema`] saying which schema and rule the create breaks (`schema` empty
    /// when a strict set has none for the path).
    pub fn check_create(&self, path: &str, mode: CreateMode, data: &[u8]) -> Result<()> {
        self.with(path, |s| s.check_create(path, mode, data))
    }

    /// Checks a set (see [`Schema::check_set`]).
    ///
    /// # Errors
    ///
    /// As [`check_create`](Self::check_create).
    pub fn check_set(&self, path: &str, data: &[u8]) -> Result<()> {
        self.with(path, |s| s.check_set(path, data))
    }

    /// Checks a delete (see [`Schema::check_delete`]).
    ///
    /// # Errors
    ///
    /// As [`check_create`](Self::check_create).
    pub fn check_delete(&self, path: &str) -> Result<()> {
        self.with(path, |s| s.check_delete(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(result: Result<()>) -> (String, String) {
        match result {
            Err(Error::Schema { schema, reason, .. }) => (schema, reason),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn patterns_match_segment_by_segment() {
        let s = Schema::new("s", "/users/{id}/config").unwrap();
        assert!(s.matches("/users/alice/config"));
        assert!(!s.matches("/users/alice"));
        assert!(!s.matches("/users/alice/config/x"));
        assert!(!s.matches("/users//config"));
        assert!(!s.matches("/groups/alice/config"));
        assert_eq!(s.pattern(), "/users/{id}/config");
        assert!(Schema::new("bad", "relative").is_err());
        assert!(Schema::new("bad", "/").is_err());
    }

    #[test]
    fn kinds_data_and_deletes_are_checked_with_the_rule_named() {
        let s = Schema::new("jobs", "/jobs/{job}")
            .unwrap()
            .ephemeral(Allowance::MustNot)
            .sequential(Allowance::Must)
            .deletable(false)
            .data(|d| {
                if d.starts_with(b"{") {
                    Ok(())
                } else {
                    Err("not a JSON object".into())
                }
            });
        assert!(s
            .check_create("/jobs/job-", CreateMode::PersistentSequential, b"{}")
            .is_ok());
        assert_eq!(
            reason(s.check_create("/jobs/job-", CreateMode::Persistent, b"{}")),
            ("jobs".to_owned(), "must be sequential".to_owned())
        );
        assert_eq!(
            reason(s.check_create("/jobs/job-", CreateMode::EphemeralSequential, b"{}")).1,
            "must not be ephemeral"
        );
        assert_eq!(
            reason(s.check_create("/jobs/job-", CreateMode::PersistentSequential, b"[]")).1,
            "not a JSON object"
        );
        assert_eq!(
            reason(s.check_set("/jobs/job-1", b"x")).1,
            "not a JSON object"
        );
        assert!(s.check_set("/jobs/job-1", b"{}").is_ok());
        assert_eq!(
            reason(s.check_delete("/jobs/job-1")).1,
            "may not be deleted"
        );
    }

    #[test]
    fn the_first_matching_schema_decides_and_strict_sets_refuse_the_rest() {
        let set = SchemaSet::new([
            Schema::new("pinned", "/a/pinned").unwrap().deletable(false),
            Schema::new("any", "/a/{x}").unwrap(),
        ]);
        assert_eq!(reason(set.check_delete("/a/pinned")).0, "pinned");
        assert!(set.check_delete("/a/other").is_ok());
        assert!(set.check_delete("/b").is_ok(), "not strict");
        let strict = set.strict(true);
        assert_eq!(
            reason(strict.check_delete("/b")),
            (String::new(), "no schema matches the path".to_owned())
        );
    }
}
