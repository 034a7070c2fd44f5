//! [`Model`]: one node's data as a typed value, with versioned writes.

use std::marker::PhantomData;
use std::sync::Arc;

use zk_client::compression::Compression;
use zk_client::{Client, CreateOptions, Stat};

use super::codec::{Codec, Format};
use super::schema::SchemaSet;
use super::ModelCache;
use crate::cache::Cache;
use crate::error::{Error, Result};
use crate::retry::{gave_up, retrying, turns};
use crate::writes::{self, DeleteOutcome};

/// Whether a path segment is a parameter (`{name}`).
fn is_parameter(segment: &str) -> bool {
    segment.len() >= 2 && segment.starts_with('{') && segment.ends_with('}')
}

/// A typed value with the `Stat` of the node it was read from (or written to): pass
/// `stat.version` to [`Model::set`] to write only over what was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versioned<T> {
    /// The value.
    pub value: T,
    /// The node's `Stat` as of that value.
    pub stat: Stat,
}

/// One node's data as a `T`, through the codec `C` (Curator's x-async `ModeledFramework`
/// on a `ZPath`; a path with parameter segments, `/users/{id}`, is
/// [`resolved`](Self::resolved) into one per node). Cheap to clone; every call is a request
/// of its own.
///
/// Reads are retried through connection losses; writes go through
/// [`writes`](crate::writes) (a lost reply is read back, never applied twice).
///
/// ```no_run
/// # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
/// use zk_recipes::model::{Model, Raw};
/// let blob = Model::new(client, "/app/blob", Raw)?;
/// let now = blob.get().await?;
/// blob.set(&zk_client::Bytes::from_static(b"v2"), Some(now.stat.version)).await?;
/// # Ok(()) }
/// ```
pub struct Model<T, C> {
    client: Client,
    path: String,
    format: Arc<Format<C>>,
    options: CreateOptions,
    /// The rules writes are checked against.
    schemas: Option<Arc<SchemaSet>>,
    _value: PhantomData<fn() -> T>,
}

impl<T, C> Clone for Model<T, C> {
    fn clone(&self) -> Self {
        Model {
            client: self.client.clone(),
            path: self.path.clone(),
            format: Arc::clone(&self.format),
            options: self.options.clone(),
            schemas: self.schemas.clone(),
            _value: PhantomData,
        }
    }
}

impl<T, C> std::fmt::Debug for Model<T, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("path", &self.path)
            .field("compressed", &self.format.compression.is_some())
            .finish_non_exhaustive()
    }
}

impl<T, C: Codec<T>> Model<T, C> {
    /// A model of the node at `path` on `client`'s session, read and written with `codec`.
    /// Nodes it creates are persistent, with parents created as containers
    /// ([`create_options`](Self::create_options) changes that). Sends nothing.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] for a path that is not absolute, is the root or ends with `/`.
    pub fn new(client: Client, path: &str, codec: C) -> Result<Model<T, C>> {
        Ok(Model {
            client,
            path: crate::path::check_base(path)?,
            format: Arc::new(Format {
                codec,
                compression: None,
            }),
            options: CreateOptions::persistent().with_container_parents(true),
            schemas: None,
            _value: PhantomData,
        })
    }

    /// Stores the encoded bytes compressed with `compression` (Curator's `compressed()`)
    /// and decompresses what it reads; with [`Gzip`](zk_client::compression) (zk-client's
    /// feature `gzip`), Curator's format.
    pub fn compressed(self, compression: impl Compression + 'static) -> Model<T, C>
    where
        C: Clone,
    {
        Model {
            format: Arc::new(Format {
                codec: self.format.codec.clone(),
                compression: Some(Arc::new(compression)),
            }),
            ..self
        }
    }

    /// Checks every write against `schemas` before sending it (Curator's `SchemaSet`): a
    /// create's mode and data, a set's data (also each write of
    /// [`update`](Self::update)), a delete. A write that breaks a rule fails with
    /// [`Error::Schema`] and nothing is sent. Models made from this one
    /// ([`resolved`](Self::resolved), [`child`](Self::child)) keep the set.
    ///
    /// ```no_run
    /// # async fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
    /// use zk_recipes::model::{Allowance, Model, Raw, Schema, SchemaSet};
    /// let schemas = SchemaSet::new([Schema::new("config", "/app/{key}")?
    ///     .ephemeral(Allowance::MustNot)
    ///     .data(|d| std::str::from_utf8(d).map(drop).map_err(|e| e.to_string()))]);
    /// let limit = Model::new(client, "/app/limit", Raw)?.schemas(schemas);
    /// let refused = limit.set(&zk_client::Bytes::from_static(b"\xff"), None).await;
    /// assert!(matches!(refused, Err(zk_recipes::Error::Schema { .. })));
    /// # Ok(()) }
    /// ```
    pub fn schemas(self, schemas: impl Into<Arc<SchemaSet>>) -> Model<T, C> {
        Model {
            schemas: Some(schemas.into()),
            ..self
        }
    }

    /// The options [`create`](Self::create) uses (mode, ACL, TTL, container parents).
    pub fn create_options(self, options: CreateOptions) -> Model<T, C> {
        Model { options, ..self }
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether the path has no parameter segment left (`{name}`, as in Curator's `ZPath`).
    pub fn is_resolved(&self) -> bool {
        !self.path.split('/').any(is_parameter)
    }

    /// The model with the path's parameter segments (`{name}`, as in Curator's `ZPath`,
    /// e.g. `/users/{id}/config`) replaced by `values`, in order: one model for many nodes of
    /// one shape. Every operation of a model whose path still has a parameter fails with
    /// [`Error::InvalidArgument`].
    ///
    /// ```
    /// # fn f(client: zk_client::Client) -> zk_recipes::Result<()> {
    /// use zk_recipes::model::{Model, Raw};
    /// let configs = Model::new(client, "/users/{id}/config", Raw)?;
    /// assert!(!configs.is_resolved());
    /// let alice = configs.resolved(&["alice"])?;
    /// assert_eq!(alice.path(), "/users/alice/config");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `values` are not one per parameter, or a value is
    /// empty, holds `/` or is `.`/`..`.
    pub fn resolved(&self, values: &[&str]) -> Result<Model<T, C>> {
        let mut values = values.iter();
        let mut path = String::with_capacity(self.path.len());
        for segment in self.path.split('/').skip(1) {
            path.push('/');
            if is_parameter(segment) {
                let Some(value) = values.next() else {
                    return Err(Error::InvalidArgument("fewer values than path parameters"));
                };
                crate::path::check_segment(value, "a path parameter's value")?;
                path.push_str(value);
            } else {
                path.push_str(segment);
            }
        }
        if values.next().is_some() {
            return Err(Error::InvalidArgument("more values than path parameters"));
        }
        Ok(Model {
            path,
            ..self.clone()
        })
    }

    /// The path, once resolved.
    fn target(&self) -> Result<&str> {
        if self.is_resolved() {
            Ok(&self.path)
        } else {
            Err(Error::InvalidArgument(
                "the model's path has unresolved parameters: call resolved()",
            ))
        }
    }

    /// The client the model uses.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The model of the child `name` (same codec, compression and options): typed children,
    /// as Curator's `ZPath` with a parameter.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a name that is empty, holds `/` or is `.`/`..`.
    pub fn child(&self, name: &str) -> Result<Model<T, C>> {
        crate::path::check_segment(name, "a child's name")?;
        Ok(Model {
            path: crate::path::join(&self.path, name),
            ..self.clone()
        })
    }

    /// The names of the node's children, sorted (make their models with
    /// [`child`](Self::child)).
    ///
    /// # Errors
    ///
    /// `NoNode`; the session's end.
    ///
    /// # Cancel safety
    ///
    /// A read: dropping the future loses nothing.
    pub async fn children(&self) -> Result<Vec<String>> {
        let path = self.target()?;
        let mut names = retrying(&self.client, || self.client.get_children(path)).await?;
        names.sort();
        Ok(names)
    }

    /// Every child of the node as a `T`, by name, sorted (typed children: Curator's
    /// `ModeledFramework.childrenAsZNodes`). The reads are pipelined (sent together, one
    /// round trip); a child deleted between the listing and its read is left out; a child
    /// whose data does not decode carries its own error.
    ///
    /// # Errors
    ///
    /// `NoNode` for the node itself; the session's end.
    ///
    /// # Cancel safety
    ///
    /// Reads only: dropping the future loses nothing.
    pub async fn child_values(&self) -> Result<Vec<(String, Result<Versioned<T>>)>> {
        let parent = self.target()?;
        for _ in turns() {
            let names = self.children().await?;
            // Sent when called: all the reads go out before the first reply is awaited.
            let reads: Vec<_> = names
                .iter()
                .map(|name| self.client.get_data(&crate::path::join(parent, name)))
                .collect();
            let mut values = Vec::with_capacity(names.len());
            let mut lost = None;
            for (name, read) in names.into_iter().zip(reads) {
                match read.await {
                    Ok((data, stat)) => {
                        let path = crate::path::join(parent, &name);
                        let value = self.format.decode(&path, data);
                        values.push((name, value.map(|value| Versioned { value, stat })));
                    }
                    Err(zk_client::Error::NoNode) => {}
                    Err(e) if e.is_connection_loss() => lost = Some(e),
                    Err(e) => return Err(e.into()),
                }
            }
            match lost {
                None => return Ok(values),
                Some(e) => crate::retry::retry_after(&self.client, e).await?,
            }
        }
        Err(gave_up())
    }

    /// Reads and decodes the node.
    ///
    /// # Errors
    ///
    /// `NoNode`; [`Error::Codec`] when the data does not decode; a compression error
    /// (`Client(Compression(..))`); the session's end.
    ///
    /// # Cancel safety
    ///
    /// A read: dropping the future loses nothing.
    pub async fn get(&self) -> Result<Versioned<T>> {
        let path = self.target()?;
        let (data, stat) = retrying(&self.client, || self.client.get_data(path)).await?;
        let value = self.format.decode(path, data)?;
        Ok(Versioned { value, stat })
    }

    /// [`get`](Self::get), with a missing node as `None`.
    ///
    /// # Errors
    ///
    /// As [`get`](Self::get), without `NoNode`.
    ///
    /// # Cancel safety
    ///
    /// A read: dropping the future loses nothing.
    pub async fn get_opt(&self) -> Result<Option<Versioned<T>>> {
        match self.get().await {
            Ok(v) => Ok(Some(v)),
            Err(Error::Client(zk_client::Error::NoNode)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Creates the node holding `value` ([`writes::create_all`]: parents per the create
    /// options, a lost reply taken as ours when the node holds our bytes at version 0).
    ///
    /// # Errors
    ///
    /// `NodeExists`; [`Error::Codec`] when `value` does not encode; the create's other
    /// errors; the session's end.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future loses only the outcome (the node may have been created).
    pub async fn create(&self, value: &T) -> Result<Stat> {
        let plain = self.format.plain(&self.path, value)?;
        if let Some(schemas) = &self.schemas {
            schemas.check_create(&self.path, self.options.mode, &plain)?;
        }
        let data = self.format.store(plain)?;
        Ok(
            writes::create_all(&self.client, &self.path, &data, &self.options)
                .await?
                .1,
        )
    }

    /// Writes `value` if the node is at `version` (`None`: any version), through a lost
    /// reply ([`writes::set_data`]). Returns the new `Stat`.
    ///
    /// # Errors
    ///
    /// `NoNode`, `BadVersion`; `ConnectionLoss` when the outcome cannot be known (see
    /// [`writes::set_data`]); [`Error::Codec`]; the session's end.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future loses only the outcome.
    pub async fn set(&self, value: &T, version: Option<i32>) -> Result<Stat> {
        let path = self.target()?;
        let plain = self.format.plain(path, value)?;
        if let Some(schemas) = &self.schemas {
            schemas.check_set(path, &plain)?;
        }
        let data = self.format.store(plain)?;
        writes::set_data(&self.client, path, &data, version).await
    }

    /// Read-modify-write: reads the value, computes `change(value)` and writes it at the
    /// version read; when another writer got there first (`BadVersion`), reads again and
    /// calls `change` again, until a write lands (compare-and-set). Returns what was written.
    /// No update is lost between concurrent updaters, and a lost reply is read back, never
    /// applied twice.
    ///
    /// # Errors
    ///
    /// `NoNode`; [`Error::Codec`]; `ConnectionLoss` when a write's reply was lost and the
    /// node moved on before it could be read back (the change may or may not be applied:
    /// `change` is not run again); [`Error::GaveUp`] after the crate's bound of conflicts in
    /// a row; the session's end.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future loses only the outcome: the last write sent may have landed.
    pub async fn update<F>(&self, mut change: F) -> Result<Versioned<T>>
    where
        F: FnMut(T) -> T,
    {
        for _ in turns() {
            let now = self.get().await?;
            let next = change(now.value);
            match self.set(&next, Some(now.stat.version)).await {
                Ok(stat) => return Ok(Versioned { value: next, stat }),
                Err(Error::Client(zk_client::Error::BadVersion)) => {}
                Err(e) => return Err(e),
            }
        }
        Err(gave_up())
    }

    /// Deletes the node ([`writes::delete_quietly`]: through a lost reply, a missing node is
    /// success), at `version` (`None`: any).
    ///
    /// # Errors
    ///
    /// `BadVersion`, `NotEmpty`; the session's end.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future loses only the outcome.
    pub async fn delete(&self, version: Option<i32>) -> Result<DeleteOutcome> {
        let path = self.target()?;
        if let Some(schemas) = &self.schemas {
            schemas.check_delete(path)?;
        }
        writes::delete_quietly(&self.client, path, version).await
    }

    /// A typed view of a new [`Cache`] of this node's subtree, on the model's client
    /// (Curator's `CachedModeledFramework`): each node is decoded once per change, with the
    /// model's codec and compression.
    ///
    /// # Errors
    ///
    /// As [`Cache::new`].
    pub fn cache(&self) -> Result<ModelCache<T, C>>
    where
        C: Clone,
    {
        let cache = Cache::new(self.client.clone(), self.target()?)?;
        let view = ModelCache::new(cache, self.format.codec.clone());
        Ok(match &self.format.compression {
            Some(z) => view.compressed_with(Arc::clone(z)),
            None => view,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Raw;

    #[tokio::test]
    async fn parameters_resolve_in_order_and_unresolved_paths_are_refused() {
        let server = zk_test_support::FakeServer::start().await;
        let (client, _conn) = zk_test_support::connect_client(&server, "", 3, 30_000, |b| b).await;
        let model = Model::new(client, "/t/{tenant}/users/{id}", Raw).unwrap();
        assert!(!model.is_resolved());
        let one = model.resolved(&["acme", "7"]).unwrap();
        assert!(one.is_resolved());
        assert_eq!(one.path(), "/t/acme/users/7");
        assert!(matches!(
            model.resolved(&["acme"]),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            model.resolved(&["acme", "7", "x"]),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            model.resolved(&["a/b", "7"]),
            Err(Error::InvalidArgument(_))
        ));
        // Refused before anything is sent (the fake server answers nothing).
        assert!(matches!(model.get().await, Err(Error::InvalidArgument(_))));
        assert!(matches!(
            model.delete(None).await,
            Err(Error::InvalidArgument(_))
        ));
        assert!(!is_parameter("{"));
        assert!(is_parameter("{}"));
    }
}
