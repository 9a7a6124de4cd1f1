//! Where toolgate keeps what its gate decided, for a connector owner to reproduce a production
//! decision exactly and for a reviewer to try a contract bump on real traffic.
//!
//! [`Retainer`] keeps what a [`RetentionPolicy`](toolgate_gate::RetentionPolicy) chooses (every
//! refusal, admissions at a sampled rate) as [`Retained`] records, on a
//! thread of its own, never in a call's way, bounded by a byte budget and an age; in a
//! [`Store`]: a local folder ([`FolderStore`], private, written atomically, never through a
//! link) or an S3-compatible bucket ([`S3Store`]), optionally sealed to an operator's `age`
//! public key ([`Seal`]). [`read_retained`] reads one back, for `toolgate reproduce` and
//! `toolgate diff --replay`.

mod config;
mod folder;
mod retainer;
mod s3;
mod seal;
mod store;

pub use config::{RetentionConfig, parse_age, parse_bytes, parse_rate};
pub use folder::FolderStore;
pub use retainer::{
    DEFAULT_MAX_RECORDS, Log, Retainer, RetentionOptions, RetentionStats, StatsReader,
};
pub use s3::S3Store;
pub use seal::{Opener, SEALED_SUFFIX, Seal};
pub use store::{Entry, MAX_OBJECT_BYTES, OBJECT_OVERHEAD, Store, StoreSpec, check_name};

use toolgate_gate::Retained;

/// The store a front kept its records in, opened to read them (`toolgate reproduce --store`,
/// `toolgate diff --replay`: `flag` names the option in messages), and the opener of its sealed
/// records when `identity` names an age identity file. A folder that does not exist is an error,
/// not an empty store.
pub fn open_kept(
    flag: &str,
    store: &str,
    endpoint: Option<&str>,
    identity: Option<&std::path::Path>,
) -> Result<(Box<dyn Store>, Option<Opener>), String> {
    let opened = StoreSpec::parse(store)
        .and_then(|spec| spec.open_to_read(endpoint))
        .map_err(|why| format!("{flag} {store}: {why}"))?;
    let opener = identity.map(Opener::from_file).transpose()?;
    Ok((opened, opener))
}

/// The retained record kept under `name` (opened with `opener` when it is sealed).
pub fn read_retained(
    store: &dyn Store,
    name: &str,
    opener: Option<&Opener>,
) -> Result<Option<Retained>, String> {
    retained_from(store, name, store.get(name), opener)
}

/// The retained records kept under `names`, in the same order, read several at once where the
/// store can ([`Store::get_all`]).
pub fn read_all_retained(
    store: &dyn Store,
    names: &[&str],
    opener: Option<&Opener>,
) -> Vec<Result<Option<Retained>, String>> {
    names
        .iter()
        .zip(store.get_all(names))
        .map(|(name, read)| retained_from(store, name, read, opener))
        .collect()
}

/// The record in what reading `name` gave.
fn retained_from(
    store: &dyn Store,
    name: &str,
    read: std::io::Result<Option<Vec<u8>>>,
    opener: Option<&Opener>,
) -> Result<Option<Retained>, String> {
    let Some(bytes) = read.map_err(|error| format!("{}: {name}: {error}", store.describe()))?
    else {
        return Ok(None);
    };
    let bytes = if name.ends_with(SEALED_SUFFIX) {
        let opener = opener.ok_or_else(|| {
            format!("{name} is sealed: give the identity that opens it (--identity FILE)")
        })?;
        opener
            .open(&bytes)
            .map_err(|why| format!("{name}: {why}"))?
    } else {
        bytes
    };
    Retained::from_bytes(&bytes)
        .map(Some)
        .map_err(|why| format!("{}: {name}: {why}", store.describe()))
}
