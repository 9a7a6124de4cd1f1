//! Where toolgate keeps what its gate decided, for a connector owner to reproduce a production
//! decision exactly and for a reviewer to try a contract bump on real traffic.
//!
//! [`Retainer`] keeps what a [`RetentionPolicy`](toolgate_gate::RetentionPolicy) chooses (every
//! refusal, admissions at a sampled rate) as [`Retained`] records, on a
//! thread of its own, never in a call's way, bounded by a byte budget and an age; in a
//! [`Store`]: a local folder ([`FolderStore`], private, written atomically, never through a
//! link) or an S3-compatible bucket ([`S3Store`]), optionally sealed to an operator's `age`
//! public key ([`Seal`]). [`read_retained`] reads one back ([`ReadError`] says why not), for
//! `toolgate reproduce` and `toolgate diff --replay`.

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

/// Why a kept record could not be read back.
#[derive(Debug)]
pub enum ReadError {
    /// The store failed the read (`place` is the store and the record's name).
    Store {
        /// `<store>: <name>`.
        place: String,
        /// What the store said.
        error: std::io::Error,
    },
    /// The record is sealed (`--retain-recipient`) and no identity was given to open it.
    Sealed {
        /// The record's name.
        name: String,
    },
    /// The identity given does not open the sealed record.
    Unopened {
        /// The record's name.
        name: String,
        /// Why.
        why: String,
    },
    /// The bytes are not a retained record, or not the ones its facts name.
    Invalid {
        /// `<store>: <name>`.
        place: String,
        /// What is wrong with them.
        why: String,
    },
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Store { place, error } => write!(f, "{place}: {error}"),
            ReadError::Sealed { name } => write!(
                f,
                "{name} is sealed: give the identity that opens it (--identity FILE)"
            ),
            ReadError::Unopened { name, why } => write!(f, "{name}: {why}"),
            ReadError::Invalid { place, why } => write!(f, "{place}: {why}"),
        }
    }
}

impl std::error::Error for ReadError {}

/// The retained record kept under `name` (opened with `opener` when it is sealed).
pub fn read_retained(
    store: &dyn Store,
    name: &str,
    opener: Option<&Opener>,
) -> Result<Option<Retained>, ReadError> {
    retained_from(store, name, store.get(name), opener)
}

/// The retained records kept under `names`, in the same order, read several at once where the
/// store can ([`Store::get_all`]).
pub fn read_all_retained(
    store: &dyn Store,
    names: &[&str],
    opener: Option<&Opener>,
) -> Vec<Result<Option<Retained>, ReadError>> {
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
) -> Result<Option<Retained>, ReadError> {
    let place = || format!("{}: {name}", store.describe());
    let bytes = match read {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Ok(None),
        Err(error) => {
            return Err(ReadError::Store {
                place: place(),
                error,
            });
        }
    };
    let bytes = if name.ends_with(SEALED_SUFFIX) {
        let opener = opener.ok_or_else(|| ReadError::Sealed {
            name: name.to_owned(),
        })?;
        opener.open(&bytes).map_err(|why| ReadError::Unopened {
            name: name.to_owned(),
            why,
        })?
    } else {
        bytes
    };
    Retained::from_bytes(&bytes)
        .map(Some)
        .map_err(|why| ReadError::Invalid {
            place: place(),
            why,
        })
}
