//! A store in an S3 bucket (Amazon's, or any S3-compatible server's: MinIO, Ceph, moto), through
//! the Arrow project's `object_store`, so that any number of stateless replicas keep one store.
//!
//! Each object is one `PUT` (S3 writes an object whole or not at all). Calls are made on a
//! runtime of the store's own: the store is used by the retainer's thread and by the command
//! line, never from an async task. A retainer's batch is written with up to [`PUTS_IN_FLIGHT`]
//! `PUT`s at once.

use std::io;
use std::time::{Duration, SystemTime};

use futures_util::StreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as ObjectPath;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig};

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
        let location = self.location(name)?;
        self.runtime.block_on(async {
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
        })
    }

    fn visit(&self, prefix: &str, each: &mut dyn FnMut(Entry)) -> io::Result<()> {
        let strip = if self.prefix.is_empty() {
            String::new()
        } else {
            format!("{}/", self.prefix)
        };
        let under = (!self.prefix.is_empty()).then(|| ObjectPath::from(self.prefix.as_str()));
        self.runtime.block_on(async {
            let mut listed = self.store.list(under.as_ref());
            while let Some(meta) = listed.next().await {
                let meta = meta.map_err(failed)?;
                let full = meta.location.to_string();
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
            Ok::<_, io::Error>(())
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
