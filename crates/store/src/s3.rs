//! A store in an S3 bucket (Amazon's, or any S3-compatible server's: MinIO, Ceph, moto), through
//! the Arrow project's `object_store`, so that any number of stateless replicas keep one store.
//!
//! Each object is one `PUT` (S3 writes an object whole or not at all). Calls are made on a
//! runtime of the store's own: the store is used by the retainer's thread and by the command
//! line, never from an async task. A retainer's batch is written with up to [`PUTS_IN_FLIGHT`]
//! `PUT`s at once.
//!
//! A listing asks for the keys under the store's prefix and the one asked for (a tool, or a
//! tool and a digest: `reproduce` lists one record's keys, not the bucket). A large one (more
//! than a page) is listed in parts, one per character a name may begin with, [`LISTS_IN_FLIGHT`]
//! at once: S3 pages a listing 1,000 keys a request, and the parts overlap their round trips.

use std::io;
use std::time::{Duration, SystemTime};

use futures_util::StreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::list::{PaginatedListOptions, PaginatedListResult, PaginatedListStore};
use object_store::path::Path as ObjectPath;
use object_store::{ClientOptions, ObjectMeta, ObjectStoreExt, PutPayload, RetryConfig};

use crate::store::{Entry, MAX_OBJECT_BYTES, OBJECT_OVERHEAD, Store, check_name};

/// The most `PUT`s in flight at once: at 40 ms a write, some 1,600 records a second.
pub(crate) const PUTS_IN_FLIGHT: usize = 64;

/// A store in an S3 bucket, under a prefix.
pub struct S3Store {
    bucket: String,
    prefix: String,
    store: AmazonS3,
    runtime: tokio::runtime::Runtime,
}

impl std::fmt::Debug for S3Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl S3Store {
    /// The bucket `bucket`, objects under `prefix`, reached with the environment's credentials
    /// and region, at `endpoint` (or the environment's `AWS_ENDPOINT_URL`, or Amazon's).
    pub fn open(bucket: &str, prefix: &str, endpoint: Option<&str>) -> Result<S3Store, String> {
        // One TLS stack for the process: rustls with ring.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
        let endpoint = endpoint
            .map(str::to_owned)
            .or_else(|| std::env::var("AWS_ENDPOINT_URL").ok());
        if let Some(endpoint) = &endpoint {
            builder = builder
                .with_endpoint(endpoint)
                // An S3-compatible server at an address: the bucket in the path.
                .with_virtual_hosted_style_request(false);
        }
        let allow_http = endpoint
            .as_deref()
            .is_some_and(|endpoint| endpoint.starts_with("http://"));
        if std::env::var_os("AWS_REGION").is_none()
            && std::env::var_os("AWS_DEFAULT_REGION").is_none()
        {
            builder = builder.with_region("us-east-1");
        }
        let store = builder
            .with_client_options(
                ClientOptions::new()
                    // Plain HTTP only to an endpoint named so (a server on loopback, say).
                    .with_allow_http(allow_http)
                    .with_connect_timeout(Duration::from_secs(5))
                    .with_timeout(Duration::from_secs(30)),
            )
            .with_retry(RetryConfig {
                max_retries: 3,
                retry_timeout: Duration::from_secs(20),
                ..RetryConfig::default()
            })
            .build()
            .map_err(|error| format!("s3://{bucket}: {error}"))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| format!("cannot start the store's runtime: {error}"))?;
        Ok(S3Store {
            bucket: bucket.to_owned(),
            prefix: prefix.to_owned(),
            store,
            runtime,
        })
    }

    fn location(&self, name: &str) -> io::Result<ObjectPath> {
        check_name(name)?;
        Ok(if self.prefix.is_empty() {
            ObjectPath::from(name)
        } else {
            ObjectPath::from(format!("{}/{name}", self.prefix))
        })
    }
}

/// The most `GET`s in flight at once when several objects are read together.
const GETS_IN_FLIGHT: usize = 32;

/// The most listings in flight at once when a large store is listed in parts.
const LISTS_IN_FLIGHT: usize = 16;

/// Every character a tool's name or a file's name may begin with ([`check_name`]'s, but `.`):
/// the parts a large store is listed in. A retained record's name begins with a hex digest, so
/// its records fall evenly into the first sixteen.
const LEADING: &[u8; 64] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-";

impl S3Store {
    /// The key every object whose name starts with `prefix` starts with: the store's prefix
    /// (as its objects were written, [`ObjectPath`]'s encoding), `/`, and `prefix`.
    fn key_prefix(&self, prefix: &str) -> String {
        if self.prefix.is_empty() {
            prefix.to_owned()
        } else {
            format!("{}/{prefix}", ObjectPath::from(self.prefix.as_str()))
        }
    }

    /// The object `name`, if there is one (at most [`MAX_OBJECT_BYTES`]).
    async fn read(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
        let location = self.location(name)?;
        let result = match self.store.get(&location).await {
            Ok(result) => result,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(error) => return Err(failed(error)),
        };
        if result.meta.size > MAX_OBJECT_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{name} is larger than any retained object"),
            ));
        }
        result
            .bytes()
            .await
            .map(|bytes| Some(bytes.to_vec()))
            .map_err(failed)
    }

    /// One page (up to the server's 1,000 keys) of the keys starting with `under`, after
    /// `token`'s page.
    async fn page(&self, under: &str, token: Option<String>) -> io::Result<PaginatedListResult> {
        let options = PaginatedListOptions {
            page_token: token,
            ..PaginatedListOptions::default()
        };
        self.store
            .list_paginated(Some(under), options)
            .await
            .map_err(failed)
    }

    /// The pages of keys starting with `under`, from `token`'s on (from the first: `None`).
    fn pages(
        &self,
        under: String,
        token: Option<String>,
    ) -> impl futures_util::Stream<Item = io::Result<Vec<ObjectMeta>>> + '_ {
        // `None` once the last page is in; `Some(token)` for the page to ask for next.
        futures_util::stream::try_unfold(Some(token), move |next| {
            let under = under.clone();
            async move {
                let Some(token) = next else {
                    return Ok(None);
                };
                let page = self.page(&under, token).await?;
                Ok(Some((page.result.objects, page.page_token.map(Some))))
            }
        })
    }

    /// Hands each listed object that is one of the store's, named as it is in the store, to
    /// `each`.
    fn hand_over(&self, listed: Vec<ObjectMeta>, prefix: &str, each: &mut dyn FnMut(Entry)) {
        let strip = self.key_prefix("");
        for meta in listed {
            let full = meta.location.as_ref();
            let Some(name) = full.strip_prefix(&strip) else {
                continue;
            };
            if check_name(name).is_err() || !name.starts_with(prefix) {
                continue;
            }
            each(Entry {
                name: name.to_owned(),
                size: meta.size + OBJECT_OVERHEAD,
                modified: SystemTime::from(meta.last_modified),
            });
        }
    }
}

fn failed(error: object_store::Error) -> io::Error {
    io::Error::other(error.to_string())
}

impl Store for S3Store {
    fn put(&self, name: &str, bytes: &[u8]) -> io::Result<u64> {
        let location = self.location(name)?;
        let payload = PutPayload::from(bytes.to_vec());
        self.runtime
            .block_on(self.store.put(&location, payload))
            .map(|_| bytes.len() as u64 + OBJECT_OVERHEAD)
            .map_err(failed)
    }

    fn put_all(&self, objects: &[(String, Vec<u8>)]) -> Vec<io::Result<u64>> {
        let puts = objects.iter().map(|(name, bytes)| async move {
            let location = self.location(name)?;
            self.store
                .put(&location, PutPayload::from(bytes.clone()))
                .await
                .map(|_| bytes.len() as u64 + OBJECT_OVERHEAD)
                .map_err(failed)
        });
        // In order, at most PUTS_IN_FLIGHT at once: S3 takes many writes in parallel, and
        // the batch is bounded by the retainer.
        self.runtime.block_on(
            futures_util::stream::iter(puts)
                .buffered(PUTS_IN_FLIGHT)
                .collect(),
        )
    }

    fn get(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
        self.runtime.block_on(self.read(name))
    }

    fn get_all(&self, names: &[&str]) -> Vec<io::Result<Option<Vec<u8>>>> {
        // In order, at most GETS_IN_FLIGHT at once: a read is a round trip.
        self.runtime.block_on(
            futures_util::stream::iter(names)
                .map(|name| self.read(name))
                .buffered(GETS_IN_FLIGHT)
                .collect(),
        )
    }

    fn visit(&self, prefix: &str, each: &mut dyn FnMut(Entry)) -> io::Result<()> {
        let under = self.key_prefix(prefix);
        self.runtime.block_on(async {
            // One page says whether the listing is large: most stores (and every `reproduce`
            // of one record) are a page, one request.
            let first = self.page(&under, None).await?;
            let Some(token) = first.page_token else {
                self.hand_over(first.result.objects, prefix, each);
                return Ok(());
            };
            let mut pages = if prefix.is_empty() || prefix.ends_with('/') {
                // Large: listed in parts, one per character a name's next part may begin
                // with, LISTS_IN_FLIGHT at once. Each part is exact (a prefix, not a range),
                // so nothing depends on the order a server lists in; the first page is
                // listed again by its part.
                futures_util::stream::iter(LEADING)
                    .map(|&leading| {
                        self.pages(format!("{under}{}", char::from(leading)), None)
                            .boxed_local()
                    })
                    .flatten_unordered(LISTS_IN_FLIGHT)
                    .boxed_local()
            } else {
                // A prefix inside a name (`reproduce`'s tool and digest): the rest, in turn.
                self.hand_over(first.result.objects, prefix, each);
                self.pages(under, Some(token)).boxed_local()
            };
            while let Some(page) = pages.next().await {
                self.hand_over(page?, prefix, each);
            }
            Ok(())
        })
    }

    fn delete(&self, name: &str) -> io::Result<()> {
        let location = self.location(name)?;
        match self.runtime.block_on(self.store.delete(&location)) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(error) => Err(failed(error)),
        }
    }

    fn describe(&self) -> String {
        if self.prefix.is_empty() {
            format!("s3://{}", self.bucket)
        } else {
            format!("s3://{}/{}", self.bucket, self.prefix)
        }
    }
}
