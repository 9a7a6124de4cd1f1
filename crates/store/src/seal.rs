//! Encryption at rest to an operator's public key (`age`, X25519 recipients): what a proxy keeps,
//! the machine running it cannot read back; the connector owner opens it with the identity
//! that only they hold.

use std::io::{self, Read, Write};
use std::path::Path;
use std::str::FromStr;

/// What a sealed object's name ends with.
pub const SEALED_SUFFIX: &str = ".age";

/// Seals objects to one or more recipients (`age1…` public keys).
pub struct Seal {
    recipients: Vec<age::x25519::Recipient>,
}

impl std::fmt::Debug for Seal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Seal({} recipients)", self.recipients.len())
    }
}

impl Seal {
    /// Recipients as `age-keygen` prints them (`age1…`).
    pub fn new(keys: &[String]) -> Result<Seal, String> {
        if keys.is_empty() {
            return Err("no recipient to seal to".to_owned());
        }
        let recipients = keys
            .iter()
            .map(|key| {
                age::x25519::Recipient::from_str(key.trim()).map_err(|error| {
                    format!("{:?} is not an age recipient (age1…): {error}", key.trim())
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Seal { recipients })
    }

    /// `bytes`, sealed.
    pub fn seal(&self, bytes: &[u8]) -> io::Result<Vec<u8>> {
        let recipients = self
            .recipients
            .iter()
            .map(|recipient| recipient as &dyn age::Recipient);
        let encryptor = age::Encryptor::with_recipients(recipients).map_err(io::Error::other)?;
        let mut sealed = Vec::with_capacity(bytes.len() + 256);
        let mut writer = encryptor.wrap_output(&mut sealed)?;
        writer.write_all(bytes)?;
        writer.finish()?;
        Ok(sealed)
    }
}

/// Opens sealed objects with the identities of an `age` identity file (`age-keygen -o`).
pub struct Opener {
    identities: Vec<Box<dyn age::Identity + Send + Sync>>,
}

impl Opener {
    /// The identities in the file at `path`.
    pub fn from_file(path: &Path) -> Result<Opener, String> {
        let file =
            std::fs::File::open(path).map_err(|error| format!("{}: {error}", path.display()))?;
        let identities = age::IdentityFile::from_buffer(io::BufReader::new(file.take(1 << 20)))
            .and_then(|file| file.into_identities().map_err(io::Error::other))
            .map_err(|error| format!("{}: not an age identity file: {error}", path.display()))?;
        Ok(Opener { identities })
    }

    /// The bytes sealed in `sealed`.
    pub fn open(&self, sealed: &[u8]) -> Result<Vec<u8>, String> {
        let decryptor = age::Decryptor::new_buffered(sealed)
            .map_err(|error| format!("not a sealed object: {error}"))?;
        let reader = decryptor
            .decrypt(
                self.identities
                    .iter()
                    .map(|identity| identity.as_ref() as &dyn age::Identity),
            )
            .map_err(|error| format!("cannot open it with these identities: {error}"))?;
        let mut bytes = Vec::new();
        reader
            .take(crate::store::MAX_OBJECT_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|error| format!("cannot open it: {error}"))?;
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use age::secrecy::ExposeSecret;

    #[test]
    fn what_is_sealed_opens_only_with_its_identity() {
        let identity = age::x25519::Identity::generate();
        let other = age::x25519::Identity::generate();
        let seal = Seal::new(&[identity.to_public().to_string()]).unwrap();
        let sealed = seal.seal(b"raw bytes").unwrap();
        assert!(!sealed.windows(9).any(|window| window == b"raw bytes"));
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, identity: &age::x25519::Identity| {
            let path = dir.path().join(name);
            std::fs::write(&path, identity.to_string().expose_secret()).unwrap();
            path
        };
        let opener = Opener::from_file(&write("mine", &identity)).unwrap();
        assert_eq!(opener.open(&sealed).unwrap(), b"raw bytes");
        let stranger = Opener::from_file(&write("other", &other)).unwrap();
        assert!(stranger.open(&sealed).is_err());
        assert!(Seal::new(&["not-a-key".to_owned()]).is_err());
        assert!(Seal::new(&[]).is_err());
    }
}
