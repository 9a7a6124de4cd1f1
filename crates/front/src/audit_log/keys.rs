//! The audit log's Ed25519 keys: read from PKCS#8 PEM files (bounded, named in every error), and
//! a new pair made for `toolgate audit keygen`.

use super::*;

pub(super) fn read_key_text(path: &Path, what: &str) -> Result<String, UsageError> {
    let file =
        File::open(path).map_err(|error| UsageError::io(path, &format!("read {what}"), &error))?;
    let bytes = toolgate_gate::read_capped(file, MAX_KEY_BYTES)
        .map_err(|error| UsageError::io(path, &format!("read {what}"), &error))?;
    String::from_utf8(bytes)
        .map_err(|_| UsageError::new(format!("{}: {what} is PEM text", path.display())))
}

/// The signing key in `path`: an Ed25519 private key, PKCS#8 PEM.
pub(crate) fn read_signing_key(path: &Path) -> Result<SigningKey, UsageError> {
    let text = read_key_text(path, "the audit signing key")?;
    SigningKey::from_pkcs8_pem(&text).map_err(|_| {
        UsageError::new(format!(
            "{}: not an Ed25519 private key in PKCS#8 PEM (-----BEGIN PRIVATE KEY-----); make one with `toolgate audit keygen` or `openssl genpkey -algorithm ed25519`",
            path.display()
        ))
    })
}

/// The verification key in `path`: an Ed25519 public key, SPKI PEM.
pub fn read_verifying_key(path: &Path) -> Result<VerifyingKey, UsageError> {
    let text = read_key_text(path, "the audit public key")?;
    VerifyingKey::from_public_key_pem(&text).map_err(|_| {
        UsageError::new(format!(
            "{}: not an Ed25519 public key in PEM (-----BEGIN PUBLIC KEY-----), as `toolgate audit keygen` prints it or `openssl pkey -pubout` writes it",
            path.display()
        ))
    })
}

/// A new signing key from the operating system's generator: its private half as PKCS#8 PEM,
/// its public half as SPKI PEM.
pub fn generate_key_pair() -> Result<(String, String), UsageError> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed)
        .map_err(|error| UsageError::new(format!("no random source for a key: {error}")))?;
    let key = SigningKey::from_bytes(&seed);
    // PKCS#8 v1 (the seed alone), as OpenSSL writes and reads it; v2's embedded public key is
    // one OpenSSL 3.0 refuses.
    let private = ed25519_dalek::pkcs8::KeypairBytes {
        secret_key: seed,
        public_key: None,
    }
    .to_pkcs8_pem(Default::default())
    .map_err(|error| UsageError::new(format!("cannot encode the key: {error}")))?;
    let public = key
        .verifying_key()
        .to_public_key_pem(Default::default())
        .map_err(|error| UsageError::new(format!("cannot encode the key: {error}")))?;
    Ok((private.to_string(), public))
}
